package trigger

import (
	"strconv"
	"strings"
	"syscall"
)

// Expressions and variable references of hist triggers: "a+b", "-(a)",
// "x/4", "$var", "SYSTEM.EVENT.$var", numeric constants, parsed the way
// Linux's parse_expr, parse_unary and parse_atom do (error order, carets
// and the expression text the trigger file shows).

// Expression operators (Op of an expression field).
const (
	opNone  = 0
	opPlus  = '+'
	opMinus = '-'
	opDiv   = '/'
	opMult  = '*'
	opUnary = 'u'
)

// maxSubexprs is the number of operators an expression may hold.
const maxSubexprs = 3

// maxVarRefs is TRACING_MAP_VARS_MAX: references one trigger may hold.
const maxVarRefs = 16

// divShift is HIST_DIV_SHIFT: small constant divisors divide by a
// multiplication and a shift.
const divShift = 20

// More hist error messages (hist_err_text).
const (
	histErrDuplicateVar      = "Variable already defined"
	histErrVarNotUnique      = "Variable name not unique, need to use fully qualified name (subsys.event.var) for variable"
	histErrMalformed         = "Malformed assignment"
	histErrTooManySubexpr    = "Too many subexpressions (3 max)"
	histErrTimestampMismatch = "Timestamp units in expression don't match"
	histErrInvalidRefKey     = "Using variable references in keys not supported"
	histErrVarNotFound       = "Couldn't find variable"
	histErrInvalidStrOperand = "String type can not be an operand in expression"
	histErrExpectNumber      = "Expecting numeric literal"
	histErrUnaryMinusSubexpr = "Unary minus not supported in sub-expressions"
	histErrDivisionByZero    = "Division by zero"
)

// containsOperator is contains_operator: the root operator of str and
// its index (the rightmost + or -, else the rightmost * or /; a - that
// starts the text is unary minus).
func containsOperator(str string) (op byte, at int) {
	minus := strings.LastIndexByte(str, '-')
	if minus == 0 {
		return opUnary, 0
	}
	op, at = opNone, -1
	if minus > 0 {
		op, at = opMinus, minus
	}
	plus := strings.LastIndexByte(str, '+')
	if plus >= 0 || minus >= 0 {
		if plus > minus {
			op, at = opPlus, plus
		}
		return op, at
	}
	div := strings.LastIndexByte(str, '/')
	if div >= 0 {
		op, at = opDiv, div
	}
	if mult := strings.LastIndexByte(str, '*'); mult > div {
		op, at = opMult, mult
	}
	return op, at
}

// isVarRef is is_var_ref: "$" and at least one more character.
func isVarRef(s string) bool { return len(s) >= 2 && s[0] == '$' }

// expr is parse_expr. It returns the field and how much of str is left
// before the first byte the kernel overwrote with a NUL while parsing it
// (the kernel parses the assignment text in place, and later lookups of
// the trigger's own variables see that shortened text).
func (p *histParser) expr(str string, flags int, varName string, n *int) (*HistField, int, Result) {
	if *n > maxSubexprs {
		return nil, 0, p.fail(syscall.EINVAL, histErrTooManySubexpr, p.errpos(str))
	}
	op, at := containsOperator(str)
	switch op {
	case opNone:
		return p.atom(str, flags, varName)
	case opUnary:
		f, r := p.unary(str, flags, varName, n)
		return f, len(str), r
	}
	*n++
	left, right := str[:at], str[at+1:]
	if left == "" || right == "" {
		return nil, 0, p.errno(syscall.EINVAL)
	}
	op1, trunc, r := p.expr(left, 0, "", n)
	if r.Errno != 0 {
		return nil, 0, r
	}
	if op1.Flags&flString != 0 {
		return nil, 0, p.fail(syscall.EINVAL, histErrInvalidStrOperand, p.errpos(left))
	}
	op2, _, r := p.expr(right, 0, "", n)
	if r.Errno != 0 {
		return nil, 0, r
	}
	if op2.Flags&flString != 0 {
		return nil, 0, p.fail(syscall.EINVAL, histErrInvalidStrOperand, p.errpos(right))
	}
	// check_expr_operands: a reference counts with its variable's flags.
	v1, v2 := op1, op2
	if op1.Flags&(flVarRef|flAlias) != 0 && op1.RefVar != nil {
		v1 = op1.RefVar
	}
	if op2.Flags&(flVarRef|flAlias) != 0 && op2.RefVar != nil {
		v2 = op2.RefVar
	}
	if v1.Flags&flUsecs != v2.Flags&flUsecs {
		return nil, 0, p.fail(syscall.EINVAL, histErrTimestampMismatch, 0)
	}
	combine := v1.Flags&v2.Flags&flConst != 0
	if combine {
		flags |= flConst
	} else {
		flags |= flExpr
	}
	flags |= op1.Flags & (flTimestamp | flUsecs)
	e := &HistField{Flags: flags, Var: varName, Op: op, Operands: []*HistField{op1, op2}}
	if op == opDiv && v2.Flags&flConst != 0 && v2.Const == 0 {
		return nil, 0, p.fail(syscall.EDOM, histErrDivisionByZero, p.errpos(right))
	}
	if combine {
		e.Const = constOp(op, v1.Const, v2.Const)
		e.Operands = nil
		e.Op = opNone
		e.Size, e.Type = 8, "u64"
		e.Expr = strconv.FormatUint(e.Const, 10)
		return e, trunc, Result{}
	}
	e.Size, e.Signed, e.Type = op1.Size, op1.Signed, op1.Type
	e.Expr, _ = exprStr(e, 0)
	return e, trunc, Result{}
}

// constOp computes a constant expression as the kernel's hist functions
// do (division by a constant included).
func constOp(op byte, a, b uint64) uint64 {
	switch op {
	case opPlus:
		return a + b
	case opMinus:
		return a - b
	case opMult:
		return a * b
	case opDiv:
		switch {
		case b&(b-1) == 0:
			s := 0
			for b>>s&1 == 0 {
				s++
			}
			return a >> s
		case b > 1<<divShift:
			return a / b
		case a < 1<<divShift:
			mult := uint64(1<<divShift) / b
			return (a*mult + (1<<divShift - 1)) >> divShift
		default:
			return a / b
		}
	}
	return 0
}

// unary is parse_unary: "-(EXPR)".
func (p *histParser) unary(str string, flags int, varName string, n *int) (*HistField, Result) {
	*n++
	if *n > maxSubexprs {
		return nil, p.fail(syscall.EINVAL, histErrTooManySubexpr, p.errpos(str))
	}
	s := str[1:]
	if strings.IndexByte(s, '(') < 0 {
		return nil, p.errno(syscall.EINVAL)
	}
	s = s[1:]
	end := strings.LastIndexByte(s, ')')
	if end < 0 {
		return nil, p.errno(syscall.EINVAL)
	}
	if end+1 != len(s) {
		return nil, p.fail(syscall.EINVAL, histErrUnaryMinusSubexpr, p.errpos(s))
	}
	s = s[:end]
	op, _, r := p.expr(s, 0, "", n)
	if r.Errno != 0 {
		return nil, r
	}
	if op.Flags&flString != 0 {
		return nil, p.fail(syscall.EINVAL, histErrInvalidStrOperand, p.errpos(s))
	}
	e := &HistField{Flags: flags | flExpr | op.Flags&(flTimestamp|flUsecs), Var: varName, Op: opUnary,
		Operands: []*HistField{op}, Size: op.Size, Signed: op.Signed, Type: op.Type}
	e.Expr, _ = exprStr(e, 0)
	return e, Result{}
}

// exprFieldStr is expr_field_str: an operand as an expression shows it.
func exprFieldStr(f *HistField, b *strings.Builder) {
	if f.Flags&flVarRef != 0 {
		b.WriteByte('$')
	} else if f.Flags&flConst != 0 {
		b.WriteString(strconv.FormatUint(f.Const, 10))
	}
	b.WriteString(f.name())
	if f.Flags != 0 && f.Flags&flVarRef == 0 {
		if m := f.modifier(); m != "" {
			b.WriteString("." + m)
		}
	}
}

// exprStr is expr_str: an expression's text; ok is false where the
// kernel gives up (nesting deeper than it prints).
func exprStr(f *HistField, level int) (string, bool) {
	if level > 1 {
		return "", false
	}
	var b strings.Builder
	if len(f.Operands) == 0 {
		exprFieldStr(f, &b)
		return b.String(), true
	}
	if f.Op == opUnary {
		sub, ok := exprStr(f.Operands[0], level+1)
		if !ok {
			return "", false
		}
		return "-(" + sub + ")", true
	}
	exprFieldStr(f.Operands[0], &b)
	b.WriteByte(f.Op)
	exprFieldStr(f.Operands[1], &b)
	return b.String(), true
}

// hasVars is field_has_hist_vars: f or an operand (three levels down) is
// a variable or a reference.
func hasVars(f *HistField, level int) bool {
	if level > 3 || f == nil {
		return false
	}
	if f.Flags&(flVar|flVarRef) != 0 {
		return true
	}
	for _, o := range f.Operands {
		if hasVars(o, level+1) {
			return true
		}
	}
	return false
}

// localVarRef is local_field_var_ref: "$v" naming a variable this trigger
// defines as a plain field (no operator, no reference) stands for that
// field's text, as far as the kernel has left it.
func (p *histParser) localVarRef(system, event string, qualified bool, ref string) (string, bool) {
	if qualified && (system != p.ev.System || event != p.ev.Name) {
		return "", false
	}
	if !isVarRef(ref) {
		return "", false
	}
	name := ref[1:]
	for _, d := range p.varDefs {
		if d.name != name {
			continue
		}
		if op, _ := containsOperator(d.expr); op != opNone || isVarRef(d.expr) {
			continue
		}
		return d.expr, true
	}
	return "", false
}

// varRef is parse_var_ref: a reference to the variable "$name" (of
// SYSTEM.EVENT when qualified). A variable that cannot be found is logged
// and nil returned: the caller goes on to parse the text as a field.
func (p *histParser) varRef(system, event string, qualified bool, ref string) *HistField {
	if !isVarRef(ref) {
		return nil
	}
	name := ref[1:]
	v := p.findEventVar(system, event, qualified, name)
	var f *HistField
	if v != nil {
		f = p.newRef(v, system, event, qualified)
	}
	if f == nil {
		p.log(histErrVarNotFound, p.errpos(name))
	}
	return f
}

// newRef is create_var_ref: the trigger's reference to variable v (one
// per variable; nil past maxVarRefs).
func (p *histParser) newRef(v *HistField, system, event string, qualified bool) *HistField {
	for _, r := range p.h.refs {
		if r.RefVar == v {
			return r
		}
	}
	if len(p.h.refs) >= maxVarRefs {
		return nil
	}
	r := &HistField{Flags: flVarRef | v.Flags&(flTimestamp|flUsecs), RefVar: v, Size: v.Size, Signed: v.Signed, Type: v.Type, Expr: v.Var}
	if qualified {
		r.RefSystem, r.RefEvent = system, event
	}
	p.h.refs = append(p.h.refs, r)
	return r
}

// alias is create_alias: a variable defined as a reference ("v=$w").
func alias(ref *HistField, varName string) *HistField {
	return &HistField{Flags: flAlias | flVar | ref.Flags&(flTimestamp|flUsecs), Var: varName, Operands: []*HistField{ref},
		RefVar: ref.RefVar, RefSystem: ref.RefSystem, RefEvent: ref.RefEvent, Size: ref.Size, Signed: ref.Signed, Type: ref.Type}
}

// findVarIn is find_var_field: the variable name of h.
func findVarIn(h *Hist, name string) *HistField {
	for _, v := range h.Vars {
		if v.Var == name {
			return v
		}
	}
	return nil
}

// fileVar is find_file_var: the first hist trigger of SYSTEM:EVENT
// defining name.
func (p *histParser) fileVar(system, event, name string) *HistField {
	if p.ev.Hists == nil {
		return nil
	}
	hs, _ := p.ev.Hists(system, event)
	for _, h := range hs {
		if v := findVarIn(h, name); v != nil {
			return v
		}
	}
	return nil
}

// varFile is find_var_file: the event whose hist triggers define name,
// which must be unique across events unless SYSTEM.EVENT is given.
func (p *histParser) varFile(system, event string, qualified bool, name string) (sys, ev string, ok bool) {
	if qualified {
		if p.ev.Exists == nil || !p.ev.Exists(system, event) {
			return "", "", false
		}
		return system, event, true
	}
	if p.ev.AllHists == nil {
		return "", "", false
	}
	for _, e := range p.ev.AllHists() {
		if ok && e.System == sys && e.Name == ev {
			continue
		}
		for _, h := range e.Hists {
			if findVarIn(h, name) == nil {
				continue
			}
			if ok {
				p.log(histErrVarNotUnique, p.errpos(name))
				return "", "", false
			}
			sys, ev, ok = e.System, e.Name, true
			break
		}
	}
	return sys, ev, ok
}

// findEventVar is find_event_var: without SYSTEM.EVENT, the events of
// the trigger's onmatch() handlers are looked at first.
func (p *histParser) findEventVar(system, event string, qualified bool, name string) *HistField {
	if !qualified {
		var found *HistField
		for _, a := range p.h.Actions {
			if a.Handler != handlerOnMatch {
				continue
			}
			if p.ev.Exists == nil || !p.ev.Exists(a.MatchSystem, a.MatchEvent) {
				continue
			}
			if v := p.fileVar(a.MatchSystem, a.MatchEvent, name); v != nil {
				if found != nil {
					p.log(histErrVarNotUnique, p.errpos(name))
					return nil
				}
				found = v
			}
		}
		if found != nil {
			return found
		}
	}
	sys, ev, ok := p.varFile(system, event, qualified, name)
	if !ok {
		return nil
	}
	return p.fileVar(sys, ev, name)
}

// ownVar is find_var: a variable name defined by this trigger so far or
// by another hist trigger of the event.
func (p *histParser) ownVar(name string) bool {
	if findVarIn(p.h, name) != nil {
		return true
	}
	for _, t := range p.list.Triggers {
		if t.Hist != nil && findVarIn(t.Hist, name) != nil {
			return true
		}
	}
	return false
}
