package fetchargs

import (
	"strings"
	"syscall"

	"github.com/cilium/ebpf/btf"

	"github.com/ktrace-dev/ktrace/grammar"
	"github.com/ktrace-dev/ktrace/kernel"
)

// parseBTFArg resolves a BTF parameter name or a typed $retval (prefix
// "$"), then any member chain after it. start is the offset of the
// argument's text in the token, for carets relative to ctx->offset.
func (p *parser) parseBTFArg(c *grammar.Chain, prefix string, start int, pc *int) syscall.Errno {
	ins := &p.prog.ins
	code := *pc
	name := prefix + c.Name.Value
	hasField := len(c.Links) > 0
	isPtr, fieldOff := false, 0
	if hasField {
		// split_next_field: the first separator must be "->" or '.'.
		sep := c.Links[0].Sep
		i := sep.Pos.Offset - start
		if sep.Value == "-" {
			p.log(p.offset+i, grammar.ErrBadHyphen)
			return syscall.EINVAL
		}
		isPtr = sep.Value == "->"
		fieldOff = i + len(sep.Value)
	}
	if !isPtr && hasField {
		p.log(p.offset+fieldOff, grammar.ErrNosupDatArg)
		return syscall.EOPNOTSUPP
	}
	var typ btf.Type
	if p.flags&flReturn != 0 && name == "$retval" {
		ins[code] = Op{Code: OpRetval}
		if !p.c.queryBTF() {
			if hasField {
				p.log(p.offset+fieldOff, grammar.ErrNoBTFEntry)
				return syscall.ENOENT
			}
			return 0
		}
		if _, void := p.c.proto.Return.(*btf.Void); void || p.c.proto.Return == nil {
			p.log(p.offset, grammar.ErrNoRetval)
			return syscall.ENOENT
		}
		typ = p.c.proto.Return
	} else {
		// Linux checks for parameters only when no earlier step of this
		// probe loaded the prototype: once loaded, a parameterless
		// function reports the name as not found instead.
		if !p.c.btfLoaded() && (!p.c.queryBTF() || len(p.c.params) == 0) {
			p.log(p.offset, grammar.ErrNoBTFEntry)
			return syscall.ENOENT
		}
		found := false
		for i, prm := range p.c.params {
			if prm.Name != name {
				continue
			}
			if isFunctionEntry(p.flags) {
				n := uint32(i)
				if p.flags&flTpoint != 0 {
					n++
				}
				ins[code] = Op{Code: OpArg, Param: n}
			} else if isFunctionReturn(p.flags) {
				ins[code] = Op{Code: OpEData, Param: uint32(i), Offset: p.storeEntryArg(i)}
			}
			typ = prm.Type
			found = true
			break
		}
		if !found {
			p.log(p.offset, grammar.ErrNoBTFArg)
			return syscall.ENOENT
		}
	}
	typ = btf.UnderlyingType(typ)
	p.lastType = typ
	p.lastBitoffs, p.lastBitsize = 0, 0
	if hasField {
		p.offset += fieldOff
		return p.parseBTFField(c.Links, typ, pc)
	}
	return 0
}

// parseBTFField follows a member chain ("a.b->c") from a pointer type,
// adding one dereference per "->" hop (parse_btf_field). links are the
// chain's separators and members after the name.
func (p *parser) parseBTFField(links []*grammar.Link, typ btf.Type, pc *int) syscall.Errno {
	ins := &p.prog.ins
	code := *pc
	k := 0
	more := true
	for more {
		ptr, ok := typ.(*btf.Pointer)
		if !ok {
			p.log(p.offset, grammar.ErrNoPtrStrct)
			return syscall.EINVAL
		}
		typ = btf.UnderlyingType(ptr.Target)
		var bitoffs uint32
		for {
			// split_next_field on the rest of the chain.
			name := links[k].Field.Value
			hasNext := k+1 < len(links)
			isPtr, nextOff := false, 0
			if hasNext {
				sep := links[k+1].Sep.Value
				if sep == "-" {
					p.log(p.offset+len(name), grammar.ErrBadHyphen)
					return syscall.EINVAL
				}
				isPtr = sep == "->"
				nextOff = len(name) + len(sep)
			}
			m, anon, ok := findMember(typ, name)
			if !ok {
				p.log(p.offset, grammar.ErrBadBTFTid)
				return syscall.EINVAL
			}
			if m == nil {
				p.log(p.offset, grammar.ErrNoBTFField)
				return syscall.ENOENT
			}
			bitoffs += anon + uint32(m.Offset)
			p.lastBitsize = uint32(m.BitfieldSize)
			typ = btf.UnderlyingType(m.Type)
			if hasNext {
				p.offset += nextOff
			} else {
				// Linux adds a NULL-pointer difference here: the
				// position is lost for every later error.
				p.offset = garbageOffset
			}
			k++
			more = hasNext
			if isPtr || !hasNext {
				break
			}
		}
		code++
		if code == progEnd {
			p.log(p.offset, grammar.ErrTooManyOps)
			return syscall.EINVAL
		}
		ins[code] = Op{Code: OpDeref, Offset: int64(bitoffs / 8)}
		*pc = code
		p.lastBitoffs = bitoffs % 8
		p.lastType = typ
	}
	return 0
}

// btfAnonStackMax is BTF_ANON_STACK_MAX.
const btfAnonStackMax = 16

// findMember is btf_find_struct_member: direct members first, then the
// anonymous members last-seen-first. ok is false when a type searched is
// not a struct or union (the kernel's -EINVAL).
func findMember(typ btf.Type, name string) (m *btf.Member, anonOff uint32, ok bool) {
	type anon struct {
		t   btf.Type
		off uint32
	}
	var stack []anon
	cur, curOff := typ, uint32(0)
	for {
		members, ok := kernel.Members(cur)
		if !ok {
			return nil, 0, false
		}
		for i := range members {
			mb := &members[i]
			if mb.Name == "" {
				if len(stack) < btfAnonStackMax {
					stack = append(stack, anon{btf.UnderlyingType(mb.Type), curOff + uint32(mb.Offset)})
				}
				continue
			}
			if mb.Name == name {
				return mb, curOff, true
			}
		}
		if len(stack) == 0 {
			return nil, 0, true
		}
		top := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		cur, curOff = top.t, top.off
	}
}

// btfTypeName is fetch_type_from_btf_type: the fetch type a BTF type is
// stored as when no type is given ("" = the default).
func (p *parser) btfTypeName(t btf.Type) string {
	switch v := t.(type) {
	case *btf.Enum:
		if v.Size == 8 {
			return "s64"
		}
		return "s32"
	case *btf.Pointer:
		return "x64"
	case *btf.Int:
		bits := v.Size * 8
		if intSigned(v) {
			switch bits {
			case 8, 16, 32, 64:
				return "s" + itoa(int(bits))
			}
			return ""
		}
		switch bits {
		case 8, 16, 32, 64:
			return "u" + itoa(int(bits))
		}
		p.lastBitsize = bits
		return "u64"
	}
	return ""
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b [20]byte
	i := len(b)
	neg := n < 0
	if neg {
		n = -n
	}
	for n > 0 {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
	}
	if neg {
		i--
		b[i] = '-'
	}
	return string(b[i:])
}

// isUnsignedByte reports an 8-bit unsigned BTF integer (how the kernel
// recognises char).
func isUnsignedByte(t btf.Type) bool {
	i, ok := btf.UnderlyingType(t).(*btf.Int)
	return ok && i.Size == 1 && !intSigned(i)
}

// intSigned reports whether BTF argument parsing treats the integer i as
// signed: its BTF_INT_SIGNED bit, except that plain "char" is always
// unsigned. Linux builds with -funsigned-char since 6.2, so on every
// kernel that parses BTF arguments (6.12 and the newest syntax) char is
// an unsigned byte, which is what lets ":string" accept "char *" and
// "char[]". The 6.1 BTF still records char as signed (6.1 used the
// compiler's signed default); read with the newest syntax, a 6.1 model's
// types are taken as that syntax's kernels compile them. "signed char"
// (s8) keeps its sign, so 6.12 rejects it for strings as before.
func intSigned(i *btf.Int) bool {
	return i.Encoding&btf.Signed != 0 && i.Name != "char"
}

// typeField returns what the kernel reads as btf_type->type for t: the
// target of a pointer, or, for sized kinds, the size reinterpreted as a
// type ID (the kernel's btf_type_is_char_ptr does not check the kind).
func (p *parser) typeField(t btf.Type) (btf.Type, bool) {
	var size uint32
	switch v := t.(type) {
	case *btf.Pointer:
		return v.Target, true
	case *btf.FuncProto:
		return v.Return, true
	case *btf.Int:
		size = v.Size
	case *btf.Enum:
		size = v.Size
	case *btf.Struct:
		size = v.Size
	case *btf.Union:
		size = v.Size
	case *btf.Float:
		size = v.Size
	default:
		return nil, false
	}
	spec := p.c.spec()
	if spec == nil {
		return nil, false
	}
	tt, err := spec.TypeByID(btf.TypeID(size))
	if err != nil {
		return nil, false
	}
	return tt, true
}

// prepareBTFString is check_prepare_btf_string_fetch: a char array is
// fetched in place, a char pointer gets one more dereference, anything
// else cannot be a string.
func (p *parser) prepareBTFString(typeName string, pc *int) syscall.Errno {
	t := p.lastType
	if arr, ok := t.(*btf.Array); ok && isUnsignedByte(arr.Type) {
		return 0
	}
	if target, ok := p.typeField(t); ok && isUnsignedByte(target) {
		next := *pc + 1
		if p.prog.ins[next].Code == OpEnd {
			p.log(p.offset, grammar.ErrTooManyOps)
			return syscall.E2BIG
		}
		op := OpDeref
		if strings.HasPrefix(typeName, "u") {
			op = OpUDeref
		}
		p.prog.ins[next] = Op{Code: op}
		*pc = next
		return 0
	}
	p.log(p.offset, grammar.ErrBadType4Str)
	return syscall.EINVAL
}
