package filter

import (
	"strings"
	"syscall"

	"github.com/ktrace-dev/ktrace/grammar"
)

// pred parses the predicate starting at index start, as the kernel's
// parse_pred does. Error positions are pos + i, i counted from start (the
// kernel passes pos = start + 1, so carets land one column right of the
// character where parsing stopped). It returns the predicate and how many
// bytes it used; a text that does not start with a field name fails with
// EPERM and no code.
func (p *parser) pred(start, pos int) (*Pred, int, *Error) {
	str := func(i int) byte { return p.at(start + i) }
	fail := func(code grammar.FilterCode, at int) (*Pred, int, *Error) {
		return nil, 0, &Error{Code: code, Pos: at, Errno: syscall.EINVAL}
	}
	i := 0
	for isSpace(str(i)) {
		i++
	}
	s := i
	for isAlnum(str(i)) || str(i) == '_' {
		i++
	}
	if i == s {
		return nil, 0, &Error{Errno: syscall.EPERM}
	}
	d := p.env.Dialect
	field := p.ev.Lookup(p.s[start+s:start+i], d)
	if field == nil {
		return fail(grammar.FiltFieldNotFound, pos+i)
	}
	rest := func() string { return p.s[min(start+i, len(p.s)):] }
	ustring, function := false, false
	if strings.HasPrefix(rest(), ".ustring") {
		ustring = true
		i += len(".ustring")
	}
	if d.FilterFunction && strings.HasPrefix(rest(), ".function") {
		function = true
		i += len(".function")
	}
	for isSpace(str(i)) {
		i++
	}
	op := Op(-1)
	for o, t := range opText {
		if strings.HasPrefix(rest(), t) {
			op = Op(o)
			break
		}
	}
	if op < 0 {
		return fail(grammar.FiltInvalidOp, pos+i)
	}
	i += len(opText[op])
	for isSpace(str(i)) {
		i++
	}
	s = i
	pr := &Pred{Pos: start, Field: field, Op: op}
	class := field.Class
	if class == CPUMask && !d.FilterCPUs {
		class = Numeric
	}
	switch {
	case function:
		if field.Size != 8 {
			return fail(grammar.FiltIllegalFieldOp, pos+i)
		}
		if op != OpEQ && op != OpNE {
			return fail(grammar.FiltInvalidOp, pos+i)
		}
		var ip uint64
		if isDigit(str(i)) {
			for isAlnum(str(i)) {
				i++
			}
			if i-s >= numBufLen {
				return fail(grammar.FiltOperandTooLong, pos+i)
			}
			v, err := grammar.ParseUint64(p.s[start+s:start+i], 0)
			if err != nil {
				return fail(grammar.FiltInvalidValue, pos+i)
			}
			ip = v
		} else {
			for str(i) != 0 && !isSpace(str(i)) {
				i++
			}
			var ok bool
			if p.env.Symbols != nil {
				ip, ok = p.env.Symbols.LookupName(p.s[start+s : start+i])
			}
			if !ok || ip == 0 {
				return fail(grammar.FiltNoFunction, pos+i)
			}
		}
		var begin, size uint64
		ok := false
		if p.env.Symbols != nil && ip != 0 {
			begin, size, ok = p.env.Symbols.SymbolExtent(ip)
		}
		if !ok {
			return fail(grammar.FiltNoFunction, pos+i)
		}
		pr.Kind, pr.Val, pr.Val2 = KindFunction, begin, begin+size
	case d.FilterCPUs && strings.HasPrefix(rest(), "CPUS"):
		switch class {
		case CPUMask, CPU, Numeric:
		default:
			return fail(grammar.FiltIllegalFieldOp, pos+i)
		}
		if op != OpEQ && op != OpNE && op != OpBand {
			return fail(grammar.FiltIllegalFieldOp, pos+i)
		}
		i += 4
		c := str(i)
		i++
		if c != '{' {
			return fail(grammar.FiltMissingBraceOpen, pos+i)
		}
		maskStart := i
		for str(i) != 0 && str(i) != '}' {
			i++
		}
		if str(i) != '}' {
			return fail(grammar.FiltMissingBraceClose, pos+i)
		}
		if maskStart == i {
			return fail(grammar.FiltInvalidCPUList, pos+i)
		}
		mask, ok := parseCPUList(p.s[start+maskStart:start+i], p.env.CPUs)
		if !ok {
			return fail(grammar.FiltInvalidCPUList, pos+i)
		}
		i++
		single, first := 0, 0
		for c, on := range mask {
			if on {
				if single == 0 {
					first = c
				}
				single++
			}
		}
		one := single == 1
		if one {
			pr.Val = uint64(first)
		} else {
			pr.Mask = mask
		}
		switch {
		case class == CPUMask && one:
			pr.Kind = KindCPUMaskCPU
		case class == CPUMask:
			pr.Kind = KindCPUMask
		case class == CPU && one:
			if pr.Op == OpBand {
				pr.Op = OpEQ
			}
			pr.Kind = KindCPU
		case class == CPU:
			pr.Kind = KindCPUCPUMask
		case one:
			if pr.Op == OpBand {
				pr.Op = OpEQ
			}
			pr.Kind = numKind(pr.Op, field.Size)
			pr.Not = pr.Op == OpNE
		default:
			pr.Kind = KindNop
			switch field.Size {
			case 1, 2, 4, 8:
				pr.Kind = KindNumCPUMask
			}
		}
	case str(i) == '\'' || str(i) == '"':
		q := str(i)
		switch op {
		case OpNE:
			pr.Not = true
		case OpGlob, OpEQ:
		default:
			return fail(grammar.FiltIllegalFieldOp, pos+i)
		}
		if !field.IsString() {
			return fail(grammar.FiltExpectDigit, pos+i)
		}
		for i++; str(i) != 0; i++ {
			if str(i) == q {
				break
			}
		}
		if str(i) == 0 {
			return fail(grammar.FiltMissingQuote, pos+i)
		}
		s++
		if i-s >= MaxStringLen {
			return fail(grammar.FiltOperandTooLong, pos+i)
		}
		pr.Regex = buildRegex(p.s[start+s:start+i], op == OpGlob, &pr.Not)
		switch field.Class {
		case Comm:
			pr.Kind = KindComm
		case StaticString:
			pr.Kind = KindString
			pr.Regex.FieldLen = field.Size
		case DynString:
			pr.Kind = KindStrLoc
		case RelDynString:
			pr.Kind = KindStrRelLoc
		default:
			pr.Kind = KindPChar
			if ustring {
				pr.Kind = KindPCharUser
			}
		}
		i++
	case isDigit(str(i)) || str(i) == '-':
		if field.IsString() {
			return fail(grammar.FiltExpectString, pos+i)
		}
		if op == OpGlob {
			return fail(grammar.FiltIllegalFieldOp, pos+i)
		}
		if str(i) == '-' {
			i++
		}
		for isAlnum(str(i)) {
			i++
		}
		if i-s >= numBufLen {
			return fail(grammar.FiltOperandTooLong, pos+i)
		}
		num := p.s[start+s : start+i]
		var v uint64
		var err error
		if field.Signed {
			var sv int64
			sv, err = grammar.ParseInt64(num, 0)
			v = uint64(sv)
		} else {
			v, err = grammar.ParseUint64(num, 0)
		}
		if err != nil {
			return fail(grammar.FiltIllegalIntval, pos+s)
		}
		pr.Val = v
		if class == CPU {
			pr.Kind = KindCPU
		} else {
			pr.Kind = numKind(op, field.Size)
			pr.Not = op == OpNE
		}
	default:
		return fail(grammar.FiltInvalidValue, pos+i)
	}
	pr.End = start + i
	pr.Text = p.s[start+s0(p.s[start:]) : start+i]
	return pr, i, nil
}

// s0 is the index of the first non-blank character of s.
func s0(s string) int {
	i := 0
	for i < len(s) && isSpace(s[i]) {
		i++
	}
	return i
}

// numKind is select_comparison_fn: equality or ordered comparison for the
// field sizes the kernel compares, nothing for the others.
func numKind(op Op, size int) Kind {
	switch size {
	case 1, 2, 4, 8:
	default:
		return KindNop
	}
	if op == OpEQ || op == OpNE {
		return KindEq
	}
	return KindCmp
}
