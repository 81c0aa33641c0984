package printfmt

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Symbols resolves kernel addresses for %pS and %ps: the symbol holding
// addr, its module ("" for vmlinux), start and size. Nil resolves
// nothing.
type Symbols interface {
	Lookup(addr uint64) (name, module string, start, size uint64, ok bool)
}

// value is an evaluated expression.
type value struct {
	str    bool
	s      string
	u      uint64
	signed bool
	arr    *Field // an array field, to be indexed
}

var errUnsupported = errors.New("not supported")

// Options are the trace options that change how events print.
type Options struct {
	// Symbols resolves %pS and %ps.
	Symbols Symbols
	// RawPointers is the hash-ptr option cleared: a bare %p prints the
	// address (as %px, 16 zero-padded hex digits) instead of its hash,
	// which only the kernel can compute.
	RawPointers bool
}

// Render prints the record as the kernel's trace file prints the event
// after "NAME: ". rec is the whole record, common fields first.
func (e *Event) Render(rec []byte, syms Symbols) (string, error) {
	return e.RenderOpts(rec, Options{Symbols: syms})
}

// RenderOpts is Render with trace options.
func (e *Event) RenderOpts(rec []byte, o Options) (string, error) {
	syms := o.Symbols
	if e.System == "syscalls" {
		return e.renderSyscall(rec)
	}
	if e.ParseErr != nil {
		return "", fmt.Errorf("print fmt of %s/%s: %w", e.System, e.Name, e.ParseErr)
	}
	r := &renderer{ev: e, rec: rec, syms: syms, rawPtr: o.RawPointers}
	out, err := r.printf(e.Fmt, e.Args)
	if err != nil {
		return "", fmt.Errorf("print fmt of %s/%s: %w", e.System, e.Name, err)
	}
	return out, nil
}

// Prefix is what the trace line has between the context columns and the
// body: "NAME: ", or nothing for syscall events, whose body names the
// syscall itself.
func (e *Event) Prefix() string {
	if e.System == "syscalls" && (strings.HasPrefix(e.Name, "sys_enter_") || strings.HasPrefix(e.Name, "sys_exit_")) {
		return ""
	}
	return e.Name + ": "
}

// renderSyscall prints a syscall event as the kernel's print_syscall_enter
// ("sys_NAME(arg: %lx, ...)") and print_syscall_exit ("sys_NAME -> 0x%lx")
// do: those events do not print through their print fmt.
func (e *Event) renderSyscall(rec []byte) (string, error) {
	var b strings.Builder
	if name, ok := strings.CutPrefix(e.Name, "sys_enter_"); ok {
		b.WriteString("sys_" + name + "(")
		first := true
		for i := range e.Fields {
			f := &e.Fields[i]
			if f.Common || f.Name == "__syscall_nr" {
				continue
			}
			v, err := uintAt(rec, f.Offset, f.Size)
			if err != nil {
				return "", err
			}
			if !first {
				b.WriteString(", ")
			}
			first = false
			b.WriteString(f.Name + ": " + strconv.FormatUint(v, 16))
		}
		b.WriteString(")")
		return b.String(), nil
	}
	if name, ok := strings.CutPrefix(e.Name, "sys_exit_"); ok {
		f, ok := e.Field("ret")
		if !ok {
			return "", fmt.Errorf("syscall exit event %s has no ret field", e.Name)
		}
		v, err := uintAt(rec, f.Offset, f.Size)
		if err != nil {
			return "", err
		}
		return "sys_" + name + " -> 0x" + strconv.FormatUint(v, 16), nil
	}
	return "", fmt.Errorf("syscall event %s: %w", e.Name, errUnsupported)
}

type renderer struct {
	ev     *Event
	rec    []byte
	syms   Symbols
	rawPtr bool
}

// printf is the kernel's vsnprintf over evaluated arguments.
func (r *renderer) printf(format string, args []Expr) (string, error) {
	var b strings.Builder
	ai := 0
	nextArg := func() (value, error) {
		if ai >= len(args) {
			return value{}, fmt.Errorf("more conversions than arguments")
		}
		a := args[ai]
		ai++
		return r.eval(a)
	}
	for i := 0; i < len(format); i++ {
		c := format[i]
		if c != '%' {
			b.WriteByte(c)
			continue
		}
		i++
		if i >= len(format) {
			return "", fmt.Errorf("format ends in %%")
		}
		if format[i] == '%' {
			b.WriteByte('%')
			continue
		}
		// flags, width, precision, length, conversion
		start := i
		for i < len(format) && strings.IndexByte("-+ #0", format[i]) >= 0 {
			i++
		}
		flags := format[start:i]
		width := ""
		if i < len(format) && format[i] == '*' {
			v, err := nextArg()
			if err != nil {
				return "", err
			}
			// A trace_seq holds a page: no field is wider.
			w := int64(int32(v.u))
			if w > 4096 {
				w = 4096
			} else if w < -4096 {
				w = -4096
			}
			width = strconv.FormatInt(w, 10)
			i++
		}
		for i < len(format) && format[i] >= '0' && format[i] <= '9' {
			width += string(format[i])
			i++
		}
		prec := ""
		if i < len(format) && format[i] == '.' {
			i++
			prec = "."
			for i < len(format) && format[i] >= '0' && format[i] <= '9' {
				prec += string(format[i])
				i++
			}
		}
		length := ""
		for i < len(format) && strings.IndexByte("hlzjtL", format[i]) >= 0 {
			length += string(format[i])
			i++
		}
		if i >= len(format) {
			return "", fmt.Errorf("unfinished conversion")
		}
		conv := format[i]
		v, err := nextArg()
		if err != nil {
			return "", err
		}
		spec := "%" + flags + width + prec
		switch conv {
		case 's':
			if !v.str {
				return "", fmt.Errorf("%%s of a number")
			}
			b.WriteString(fmt.Sprintf(spec+"s", v.s))
		case 'c':
			if v.str {
				return "", fmt.Errorf("%%c of a string")
			}
			b.WriteString(fmt.Sprintf(spec+"c", rune(byte(v.u))))
		case 'd', 'i':
			if v.str {
				return "", fmt.Errorf("%%d of a string")
			}
			b.WriteString(fmt.Sprintf(spec+"d", signedOf(v.u, length)))
		case 'u', 'x', 'X', 'o':
			if v.str {
				return "", fmt.Errorf("%%%c of a string", conv)
			}
			verb := string(conv)
			if conv == 'u' {
				verb = "d"
			}
			b.WriteString(fmt.Sprintf(spec+verb, unsignedOf(v.u, length)))
		case 'p':
			ext := byte(0)
			if i+1 < len(format) && isAlnum(format[i+1]) {
				ext = format[i+1]
				i++
			}
			s, err := r.pointer(v, ext)
			if err != nil {
				return "", err
			}
			b.WriteString(s)
		default:
			return "", fmt.Errorf("conversion %%%c: %w", conv, errUnsupported)
		}
	}
	return b.String(), nil
}

// signedOf is v as the signed integer a length modifier reads.
func signedOf(v uint64, length string) int64 {
	switch length {
	case "":
		return int64(int32(v))
	case "h":
		return int64(int16(v))
	case "hh":
		return int64(int8(v))
	}
	return int64(v)
}

// unsignedOf is v as the unsigned integer a length modifier reads.
func unsignedOf(v uint64, length string) uint64 {
	switch length {
	case "":
		return uint64(uint32(v))
	case "h":
		return uint64(uint16(v))
	case "hh":
		return uint64(uint8(v))
	}
	return v
}

// pointer prints %p with its extension: %pS and %pB as SYMBOL+0xOFF/0xSIZE,
// %ps as SYMBOL; other pointers print hashed (or as the kernel's other
// extensions decide), which ktrace cannot reproduce.
func (r *renderer) pointer(v value, ext byte) (string, error) {
	if v.str {
		return "", fmt.Errorf("%%p of a string")
	}
	switch ext {
	case 'S', 's', 'B', 'F', 'f':
		if r.syms == nil {
			return "", fmt.Errorf("%%p%c needs kernel symbols", ext)
		}
		name, mod, start, size, ok := r.syms.Lookup(v.u)
		if !ok {
			return "0x" + strconv.FormatUint(v.u, 16), nil
		}
		if mod != "" {
			mod = " [" + mod + "]"
		}
		if ext == 's' || ext == 'f' {
			return name + mod, nil
		}
		return fmt.Sprintf("%s+0x%x/0x%x%s", name, v.u-start, size, mod), nil
	}
	if ext == 0 && r.rawPtr {
		return fmt.Sprintf("%016x", v.u), nil
	}
	if ext == 0 {
		return "", fmt.Errorf("%%p prints a hashed pointer (ktrace prints the address with the hash-ptr option cleared): %w", errUnsupported)
	}
	return "", fmt.Errorf("%%p%c: %w", ext, errUnsupported)
}

// eval evaluates an expression over the record.
func (r *renderer) eval(x Expr) (value, error) {
	switch x := x.(type) {
	case numLit:
		return value{u: x.v}, nil
	case strLit:
		return value{str: true, s: x.s}, nil
	case ident:
		return value{}, fmt.Errorf("the format names %s, which the record does not hold: %w", x.name, errUnsupported)
	case recRef:
		return r.field(x.field)
	case index:
		a, err := r.eval(x.x)
		if err != nil {
			return value{}, err
		}
		i, err := r.eval(x.i)
		if err != nil {
			return value{}, err
		}
		if a.arr == nil || a.arr.Count == 0 {
			return value{}, fmt.Errorf("index of a non-array")
		}
		f := a.arr
		es := f.Size / f.Count
		if i.u >= uint64(f.Count) {
			return value{}, fmt.Errorf("index %d of %s[%d]", i.u, f.Name, f.Count)
		}
		u, err := uintAt(r.rec, f.Offset+int(i.u)*es, es)
		if err != nil {
			return value{}, err
		}
		if f.Signed {
			u = signExtend(u, es)
		}
		return value{u: u, signed: f.Signed}, nil
	case unop:
		a, err := r.num(x.x)
		if err != nil {
			return value{}, err
		}
		switch x.op {
		case "-":
			return value{u: -a.u, signed: a.signed}, nil
		case "~":
			return value{u: ^a.u, signed: a.signed}, nil
		case "!":
			return boolVal(a.u == 0), nil
		}
		return a, nil
	case binop:
		return r.binop(x)
	case cond:
		c, err := r.num(x.c)
		if err != nil {
			return value{}, err
		}
		if c.u != 0 {
			return r.eval(x.a)
		}
		return r.eval(x.b)
	case cast:
		a, err := r.eval(x.x)
		if err != nil {
			return value{}, err
		}
		if a.str {
			return a, nil
		}
		return castTo(x.typ, a)
	case call:
		return r.call(x)
	}
	return value{}, fmt.Errorf("expression %T: %w", x, errUnsupported)
}

func boolVal(b bool) value {
	if b {
		return value{u: 1, signed: true}
	}
	return value{signed: true}
}

func (r *renderer) num(x Expr) (value, error) {
	v, err := r.eval(x)
	if err != nil {
		return v, err
	}
	if v.str {
		return v, fmt.Errorf("a string where a number is needed")
	}
	return v, nil
}

// field reads REC->name.
func (r *renderer) field(name string) (value, error) {
	f, ok := r.ev.Field(name)
	if !ok {
		return value{}, fmt.Errorf("no field %s", name)
	}
	switch {
	case f.DataLoc || f.RelLoc:
		return value{}, fmt.Errorf("REC->%s of a dynamic field: %w", name, errUnsupported)
	case f.Count > 0 && f.isString():
		if f.Offset+f.Size > len(r.rec) {
			return value{}, fmt.Errorf("field %s beyond the record", name)
		}
		return value{str: true, s: cString(r.rec[f.Offset : f.Offset+f.Size])}, nil
	case f.Count > 0:
		return value{arr: f}, nil
	}
	u, err := uintAt(r.rec, f.Offset, f.Size)
	if err != nil {
		return value{}, err
	}
	if f.Signed {
		u = signExtend(u, f.Size)
	}
	return value{u: u, signed: f.Signed}, nil
}

func (r *renderer) binop(x binop) (value, error) {
	if x.op == "&&" || x.op == "||" {
		a, err := r.num(x.x)
		if err != nil {
			return value{}, err
		}
		if x.op == "&&" && a.u == 0 {
			return boolVal(false), nil
		}
		if x.op == "||" && a.u != 0 {
			return boolVal(true), nil
		}
		b, err := r.num(x.y)
		if err != nil {
			return value{}, err
		}
		return boolVal(b.u != 0), nil
	}
	a, err := r.num(x.x)
	if err != nil {
		return value{}, err
	}
	b, err := r.num(x.y)
	if err != nil {
		return value{}, err
	}
	signed := a.signed && b.signed
	switch x.op {
	case "+":
		return value{u: a.u + b.u, signed: signed}, nil
	case "-":
		return value{u: a.u - b.u, signed: signed}, nil
	case "*":
		return value{u: a.u * b.u, signed: signed}, nil
	case "/", "%":
		if b.u == 0 {
			return value{}, fmt.Errorf("division by zero")
		}
		if signed {
			if x.op == "/" {
				return value{u: uint64(int64(a.u) / int64(b.u)), signed: true}, nil
			}
			return value{u: uint64(int64(a.u) % int64(b.u)), signed: true}, nil
		}
		if x.op == "/" {
			return value{u: a.u / b.u}, nil
		}
		return value{u: a.u % b.u}, nil
	case "&":
		return value{u: a.u & b.u, signed: signed}, nil
	case "|":
		return value{u: a.u | b.u, signed: signed}, nil
	case "^":
		return value{u: a.u ^ b.u, signed: signed}, nil
	case "<<":
		return value{u: a.u << (b.u & 63), signed: a.signed}, nil
	case ">>":
		if a.signed {
			return value{u: uint64(int64(a.u) >> (b.u & 63)), signed: true}, nil
		}
		return value{u: a.u >> (b.u & 63)}, nil
	case "==":
		return boolVal(a.u == b.u), nil
	case "!=":
		return boolVal(a.u != b.u), nil
	}
	// Relational: signed only when both sides are.
	var lt, eq bool
	if signed {
		lt, eq = int64(a.u) < int64(b.u), a.u == b.u
	} else {
		lt, eq = a.u < b.u, a.u == b.u
	}
	switch x.op {
	case "<":
		return boolVal(lt), nil
	case "<=":
		return boolVal(lt || eq), nil
	case ">":
		return boolVal(!lt && !eq), nil
	case ">=":
		return boolVal(!lt), nil
	}
	return value{}, fmt.Errorf("operator %s: %w", x.op, errUnsupported)
}

// castTo converts a number to a C type by the type's size and sign.
func castTo(typ string, a value) (value, error) {
	if strings.Contains(typ, "*") {
		return value{u: a.u}, nil
	}
	words := strings.Fields(strings.ReplaceAll(typ, "const", ""))
	t := strings.Join(words, " ")
	size, signed := 0, false
	switch t {
	case "unsigned long long", "unsigned long", "long unsigned int", "u64", "__u64", "size_t", "sector_t", "unsigned long int", "uintptr_t", "dma_addr_t", "phys_addr_t", "__le64", "__be64":
		size = 8
	case "long long", "long", "long int", "s64", "__s64", "ssize_t", "loff_t", "ktime_t", "time64_t":
		size, signed = 8, true
	case "unsigned int", "unsigned", "u32", "__u32", "gfp_t", "uid_t", "gid_t", "dev_t", "__le32", "__be32", "blk_opf_t", "umode_t":
		size = 4
		if t == "umode_t" {
			size = 2
		}
	case "int", "signed int", "s32", "__s32", "pid_t":
		size, signed = 4, true
	case "unsigned short", "u16", "__u16", "__le16", "__be16", "unsigned short int":
		size = 2
	case "short", "s16", "__s16", "short int":
		size, signed = 2, true
	case "unsigned char", "u8", "__u8":
		size = 1
	case "char", "signed char", "s8", "__s8":
		size, signed = 1, true
	case "bool", "_Bool":
		return boolVal(a.u != 0), nil
	default:
		return value{}, fmt.Errorf("cast to %q: %w", typ, errUnsupported)
	}
	u := a.u
	if size < 8 {
		u &= 1<<(8*uint(size)) - 1
		if signed {
			u = signExtend(u, size)
		}
	}
	return value{u: u, signed: signed}, nil
}

func (r *renderer) call(x call) (value, error) {
	switch x.fn {
	case "__get_str", "__get_rel_str":
		if len(x.args) != 1 {
			return value{}, fmt.Errorf("%s takes one field", x.fn)
		}
		id, ok := x.args[0].(ident)
		if !ok {
			return value{}, fmt.Errorf("%s of a non-field", x.fn)
		}
		f, ok := r.ev.Field(id.name)
		if !ok {
			return value{}, fmt.Errorf("no field %s", id.name)
		}
		d, err := f.dynData(r.rec)
		if err != nil {
			return value{}, err
		}
		return value{str: true, s: cString(d)}, nil
	case "__print_symbolic", "__print_symbolic_u64":
		if len(x.args) < 1 {
			return value{}, fmt.Errorf("%s without a value", x.fn)
		}
		v, err := r.num(x.args[0])
		if err != nil {
			return value{}, err
		}
		for _, a := range x.args[1:] {
			p, ok := a.(pair)
			if !ok {
				return value{}, fmt.Errorf("%s: an entry is not { value, name }", x.fn)
			}
			m, err := r.num(p.v)
			if err != nil {
				return value{}, err
			}
			if m.u == v.u {
				return value{str: true, s: p.name}, nil
			}
		}
		return value{str: true, s: "0x" + strconv.FormatUint(v.u, 16)}, nil
	case "__print_flags", "__print_flags_u64":
		if len(x.args) < 2 {
			return value{}, fmt.Errorf("%s without a value and a delimiter", x.fn)
		}
		v, err := r.num(x.args[0])
		if err != nil {
			return value{}, err
		}
		d, err := r.eval(x.args[1])
		if err != nil {
			return value{}, err
		}
		if !d.str {
			return value{}, fmt.Errorf("%s: the delimiter is not a string", x.fn)
		}
		flags := v.u
		var b strings.Builder
		first := true
		for _, a := range x.args[2:] {
			if flags == 0 {
				break
			}
			p, ok := a.(pair)
			if !ok {
				return value{}, fmt.Errorf("%s: an entry is not { mask, name }", x.fn)
			}
			m, err := r.num(p.v)
			if err != nil {
				return value{}, err
			}
			if flags&m.u != m.u {
				continue
			}
			flags &^= m.u
			if !first {
				b.WriteString(d.s)
			}
			first = false
			b.WriteString(p.name)
		}
		if flags != 0 {
			if !first {
				b.WriteString(d.s)
			}
			b.WriteString("0x" + strconv.FormatUint(flags, 16))
		}
		return value{str: true, s: b.String()}, nil
	}
	return value{}, fmt.Errorf("function %s: %w", x.fn, errUnsupported)
}
