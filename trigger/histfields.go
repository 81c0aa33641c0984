package trigger

import (
	"strings"
	"syscall"

	"github.com/ktrace-dev/ktrace/filter"
	"github.com/ktrace-dev/ktrace/grammar"
)

// fields is create_hist_fields: the variable definitions, then values,
// variables and keys.
func (p *histParser) fields(h *Hist, remove bool) Result {
	// parse_var_defs: each assignment holds NAME=EXPR items split on ','.
	for _, a := range h.assigns {
		for j, item := range strings.Split(a, ",") {
			if j == maxVars {
				// The kernel reads no more of one assignment.
				break
			}
			name, expr, ok := strings.Cut(item, "=")
			if !ok {
				return p.fail(syscall.EINVAL, histErrMalformed, p.errpos(name))
			}
			if len(p.varDefs) == maxVars {
				return p.fail(syscall.EINVAL, histErrTooManyVars, p.errpos(name))
			}
			p.varDefs = append(p.varDefs, varDef{name, expr})
		}
	}
	if h.valsStr != nil {
		// create_val_fields: at most maxVals items are looked at (a
		// skipped hitcount counts) while there is room for a value;
		// what is left must be a lone "hitcount". A bare hitcount is the
		// implicit column: 6.1 skips every one, 6.12 only the first
		// (later ones are value columns).
		items := strings.Split(*h.valsStr, ",")
		i, j, nHit := 0, 1, 0
		for ; i < maxVals && j < maxVals && i < len(items); i++ {
			s := items[i]
			if s == "hitcount" {
				nHit++
				if !p.d.HistNoHitcount || nHit == 1 {
					continue
				}
			}
			f, _, r := p.field(s, 0, "")
			if r.Errno != 0 {
				return r
			}
			h.Vals = append(h.Vals, f)
			j++
		}
		if rest := strings.Join(items[i:], ","); i < len(items) && rest != "hitcount" {
			return p.errno(syscall.EINVAL)
		}
	}
	if h.NoHitcount && len(h.Vals) == 0 {
		return p.fail(syscall.ENOENT, histErrNeedNoHCVal, 0)
	}
	for i := range p.varDefs {
		d := &p.varDefs[i]
		if !remove && p.ownVar(d.name) {
			return p.fail(syscall.EINVAL, histErrDuplicateVar, p.errpos(d.name))
		}
		f, trunc, r := p.field(d.expr, flVar, d.name)
		if r.Errno != 0 {
			return r
		}
		if f.Flags&flExecname != 0 {
			// update_var_execname: the variable holds the comm.
			f.Flags = flString | flVar | flExecname
			f.Size, f.Signed, f.Type = filter.MaxStringLen, false, "char[]"
		}
		f.Flags |= flVar
		f.Var = d.name
		f.owner = h
		d.expr = d.expr[:trunc]
		h.Vars = append(h.Vars, f)
	}
	size := 0
	items := strings.Split(*h.keysStr, ",")
	for i, s := range items {
		if i == maxKeys {
			// create_key_fields parses the first keys, then refuses
			// what is left.
			return p.errno(syscall.EINVAL)
		}
		var f *HistField
		if s == "stacktrace" {
			f = &HistField{Flags: flStacktrace | flKey, Size: 16 * 8, legacy: !p.d.FilterStacktrace, Type: "unsigned long[]"}
		} else {
			var r Result
			f, _, r = p.field(s, flKey, "")
			if r.Errno != 0 {
				return r
			}
			if hasVars(f, 0) {
				return p.fail(syscall.EINVAL, histErrInvalidRefKey, p.errpos(s))
			}
		}
		size += (f.Size + 7) &^ 7
		if size > maxKeySize {
			return p.errno(syscall.EINVAL)
		}
		h.Keys = append(h.Keys, f)
	}
	return Result{}
}

// field is parse_expr with the value and variable rules of
// __create_val_field; it returns the text left by in-place parsing (see
// expr).
func (p *histParser) field(str string, flags int, varName string) (*HistField, int, Result) {
	n := 0
	f, trunc, r := p.expr(str, flags, varName, &n)
	if r.Errno != 0 {
		return nil, 0, r
	}
	var refused int
	switch {
	case flags&flKey != 0:
	case flags&flVar != 0:
		refused = flBucket | flLog2
		if p.d.HistNoHitcount {
			refused |= flGraph | flPercent
		}
	default:
		refused = flBucket | flLog2 | flSym | flSymOffset | flSyscall
		if p.d.HistNoHitcount {
			refused |= flGraph | flPercent | flStacktrace
		}
	}
	if f.Flags&refused != 0 {
		return nil, 0, p.fail(syscall.EINVAL, histErrBadFieldModifier, p.errpos(str))
	}
	return f, trunc, Result{}
}

// plainModifiers are the field modifiers that take no value and fit every
// field, with the flag each sets.
var plainModifiers = map[string]int{
	"hex":        flHex,
	"sym":        flSym,
	"symXoffset": flSymOffset,
	"syscall":    flSyscall,
	"log2":       flLog2,
	"usecs":      flUsecs,
}

// atom is parse_atom: a numeric constant, a variable reference ("$v",
// "SYSTEM.EVENT.$v") or a field ([SYSTEM.EVENT.]NAME[.MODIFIER]). It
// returns the field and the text left by in-place parsing.
func (p *histParser) atom(str string, flags int, varName string) (*HistField, int, Result) {
	if str != "" && str[0] >= '0' && str[0] <= '9' {
		v, err := grammar.ParseUint64(str, 0)
		if err != nil {
			return nil, 0, p.fail(syscall.EINVAL, histErrExpectNumber, p.errpos(str))
		}
		return &HistField{Flags: flags | flConst, Var: varName, Const: v, Size: 8, Type: "u64", Expr: str}, len(str), Result{}
	}
	trunc := len(str)
	var system, event string
	qualified := false
	if i := strings.IndexByte(str, '.'); i >= 0 && strings.IndexByte(str[i+1:], '.') >= 0 {
		trunc = i
		var rest string
		system, rest, _ = strings.Cut(str, ".")
		event, str, _ = strings.Cut(rest, ".")
		qualified = true
	}
	if s, ok := p.localVarRef(system, event, qualified, str); ok {
		str = s
	} else if ref := p.varRef(system, event, qualified, str); ref != nil {
		if varName != "" {
			return alias(ref, varName), trunc, Result{}
		}
		return ref, trunc, Result{}
	}
	f, r := p.parseField(str, flags)
	if r.Errno != 0 {
		return nil, 0, r
	}
	f.Var = varName
	return f, trunc, Result{}
}

// parseField is parse_field and create_hist_field: NAME[.MODIFIER].
func (p *histParser) parseField(str string, flags int) (*HistField, Result) {
	name, mod, hasMod := strings.Cut(str, ".")
	f := &HistField{Flags: flags}
	bad := func() (*HistField, Result) {
		return nil, p.fail(syscall.EINVAL, histErrBadFieldModifier, p.errpos(mod))
	}
	if hasMod {
		switch fl, plain := plainModifiers[mod]; {
		case plain:
			f.Flags |= fl
			f.log2Wraps = fl == flLog2 && p.d.Log2Wraps
		case mod == "execname" && name == "common_pid":
			f.Flags |= flExecname
		case strings.HasPrefix(mod, "bucket"):
			m := strings.TrimPrefix(mod[6:], "s")
			if !strings.HasPrefix(m, "=") {
				// The caret is at what follows bucket[s] (at 0
				// when nothing does: strstr of "").
				mod = m
				return bad()
			}
			v, err := grammar.ParseUint64(m[1:], 0)
			if err != nil || v == 0 {
				mod = m[1:]
				return bad()
			}
			f.Flags |= flBucket
			f.Buckets = v
		case strings.HasPrefix(mod, "percent"):
			if flags&(flVar|flKey) != 0 {
				return bad()
			}
			f.Flags |= flPercent
		case strings.HasPrefix(mod, "graph"):
			if flags&(flVar|flKey) != 0 {
				return bad()
			}
			f.Flags |= flGraph
		case mod == "stacktrace" && p.d.FilterStacktrace:
			// A field read as a stack trace (Linux 6.5).
			f.Flags |= flStacktrace
		default:
			return bad()
		}
	}
	switch name {
	case "common_timestamp":
		f.Flags |= flTimestamp
		f.Size, f.Type = 8, "u64"
		if p.h != nil {
			p.h.timestamps = true
		}
	case "common_cpu":
		f.Flags |= flCPU
		f.Size, f.Type = 4, "unsigned int"
		f.cpuName = name
	case "common_stacktrace":
		if !p.d.FilterStacktrace {
			return nil, p.fail(syscall.EINVAL, histErrFieldNotFound, p.errpos(name))
		}
		f.Flags |= flStacktrace
		f.Size, f.Type = 16*8, "unsigned long[]"
	case "hitcount":
		if !p.d.HistNoHitcount {
			// Before 6.3 "hitcount" is a value only when bare (and
			// then implicit): hitcount.MOD is an unknown field.
			return nil, p.fail(syscall.EINVAL, histErrFieldNotFound, p.errpos(name))
		}
		f.Flags |= flHitcount
		f.Size, f.Type = 8, "u64"
	default:
		fl := p.ev.Fields.Lookup(name, p.d)
		if fl == nil || fl.Size == 0 {
			switch {
			case fl != nil && fl.Class == filter.CPU:
				f.Flags |= flCPU
				f.Size, f.Type = 4, "unsigned int"
				f.cpuName = fl.Name
			case fl != nil && fl.Class == filter.Stacktrace:
				// The generic field ("stacktrace", "STACKTRACE"),
				// which the trigger line names: NAME.stacktrace.
				f.Flags |= flStacktrace
				f.Size, f.Type = 16*8, "unsigned long[]"
				f.Name = fl.Name
			default:
				return nil, p.fail(syscall.EINVAL, histErrFieldNotFound, p.errpos(name))
			}
			break
		}
		f.Name = fl.Name
		f.Size = fl.Size
		f.Signed = fl.Signed
		f.Field = fl
		f.Type = fl.Type
		if fl.IsString() && fl.Class != filter.PtrString {
			// create_hist_field: a static string keeps its field's
			// size (two char[16] keys fit in a key); any other string
			// takes MAX_FILTER_STR_VAL.
			f.Flags |= flString
			if fl.Class != filter.StaticString {
				f.Size = filter.MaxStringLen
			}
		}
	}
	if f.Flags&flStacktrace != 0 {
		f.Size = 16 * 8
	}
	return f, Result{}
}

// sortKeys is create_sort_keys.
func (p *histParser) sortKeys(h *Hist) Result {
	h.sorts = []sortKey{{idx: 0}}
	if h.sortStr == nil {
		return Result{}
	}
	items := strings.Split(*h.sortStr, ",")
	var out []sortKey
	all := h.sortable()
	for i, s := range items {
		if s == "" {
			return p.fail(syscall.EINVAL, histErrEmptySortField, p.errpos("sort="))
		}
		if i == maxSortKeys-1 && i+1 < len(items) {
			return p.fail(syscall.EINVAL, histErrTooManySort, p.errpos("sort="))
		}
		name, mod, hasMod := strings.Cut(s, ".")
		if name == "" {
			return p.fail(syscall.EINVAL, histErrEmptySortField, p.errpos("sort="))
		}
		// The field is found first, then its modifier checked
		// (is_descending).
		idx := -1
		if name == "hitcount" {
			idx = 0
		} else {
			for j, f := range all {
				if f.name() == name {
					idx = j + 1
					break
				}
			}
		}
		if idx < 0 {
			return p.fail(syscall.EINVAL, histErrInvalidSortField, p.errpos(name))
		}
		desc := false
		if hasMod {
			switch mod {
			case "descending":
				desc = true
			case "ascending":
			default:
				return p.fail(syscall.EINVAL, histErrInvalidSortMod, p.errpos(mod))
			}
		}
		out = append(out, sortKey{idx: idx, descending: desc})
	}
	h.sorts = out
	return Result{}
}

// HistText is the hist file: one block per hist trigger (Trigger.Text),
// with the table tables gives it. With tables nil, or a nil table,
// a block has the kernel's header, no entries and zero totals: the
// histogram of an event that was never hit.
func (l *List) HistText(tables func(*Trigger) *Table, names Names, v SortVariant) string {
	var b strings.Builder
	n := 0
	for _, t := range l.Triggers {
		if t.Hist == nil {
			continue
		}
		if n > 0 {
			b.WriteString("\n\n")
		}
		n++
		var tab *Table
		if tables != nil {
			tab = tables(t)
		}
		b.WriteString(t.Text(tab, names, v))
	}
	return b.String()
}

// Named returns the definition of the hist trigger named name in l, nil
// when there is none.
func (l *List) Named(name string) *Hist {
	for _, t := range l.Triggers {
		if t.Hist != nil && t.Hist.Name == name {
			return t.Hist
		}
	}
	return nil
}
