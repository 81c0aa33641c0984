package kernel

import (
	"fmt"
	"strings"

	"github.com/cilium/ebpf/btf"
)

// CType is the C spelling of a BTF type, as in a declaration without a
// name ("const char *", "struct file *", "int[4]").
func CType(t btf.Type) string { return CDecl(t, "") }

// CDecl is the C declaration of name with type t.
func CDecl(t btf.Type, name string) string {
	join := func(base, decl string) string {
		if decl == "" {
			return base
		}
		if strings.HasPrefix(decl, "*") && strings.HasSuffix(base, "*") {
			return base + decl
		}
		return base + " " + decl
	}
	for depth := 0; depth < 32; depth++ {
		switch v := t.(type) {
		case nil, *btf.Void:
			return join("void", name)
		case *btf.Pointer:
			if _, ok := v.Target.(*btf.FuncProto); ok {
				name = "(*" + name + ")"
			} else {
				name = "*" + name
			}
			t = v.Target
		case *btf.Const, *btf.Volatile:
			qual, inner := qualifier(v)
			if _, ok := inner.(*btf.Pointer); ok {
				name = qual + " " + name
				t = inner
				continue
			}
			return qual + " " + CDecl(inner, name)
		case *btf.Restrict:
			name = "restrict " + name
			t = v.Type
		case *btf.TypeTag:
			name = v.Value + " " + name
			t = v.Type
		case *btf.Array:
			if strings.HasPrefix(name, "*") {
				name = "(" + name + ")"
			}
			name = fmt.Sprintf("%s[%d]", name, v.Nelems)
			t = v.Type
		case *btf.FuncProto:
			var ps []string
			for _, p := range v.Params {
				ps = append(ps, CType(p.Type))
			}
			if len(ps) == 0 {
				ps = append(ps, "void")
			}
			name = name + "(" + strings.Join(ps, ", ") + ")"
			t = v.Return
		case *btf.Struct:
			return join("struct "+v.Name, name)
		case *btf.Union:
			return join("union "+v.Name, name)
		case *btf.Enum:
			return join("enum "+v.Name, name)
		case *btf.Fwd:
			return join(v.Kind.String()+" "+v.Name, name)
		default:
			return join(t.TypeName(), name)
		}
	}
	return join("...", name)
}

// qualifier returns the keyword of a const or volatile type and the type
// it qualifies.
func qualifier(t btf.Type) (string, btf.Type) {
	switch v := t.(type) {
	case *btf.Const:
		return "const", v.Type
	case *btf.Volatile:
		return "volatile", v.Type
	}
	return "", t
}

// Members returns the members of a struct or union type; ok is false for
// any other type.
func Members(t btf.Type) (members []btf.Member, ok bool) {
	switch v := t.(type) {
	case *btf.Struct:
		return v.Members, true
	case *btf.Union:
		return v.Members, true
	}
	return nil, false
}
