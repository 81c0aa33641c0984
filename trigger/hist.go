package trigger

import (
	"fmt"
	"strings"
	"syscall"

	"github.com/ktrace-dev/ktrace/events"
	"github.com/ktrace-dev/ktrace/filter"
	"github.com/ktrace-dev/ktrace/grammar"
)

// Limits of hist triggers (tracing_map.h, trace_events_hist.c).
const (
	maxKeys     = 3   // TRACING_MAP_KEYS_MAX
	maxVals     = 3   // TRACING_MAP_VALS_MAX, hitcount included
	maxSortKeys = 2   // TRACING_MAP_SORT_KEYS_MAX
	maxVars     = 16  // TRACING_MAP_VARS_MAX
	maxKeySize  = 384 // HIST_KEY_SIZE_MAX
	minBits     = 7   // TRACING_MAP_BITS_MIN
	maxBits     = 17  // TRACING_MAP_BITS_MAX
	defaultBits = 11  // TRACING_MAP_BITS_DEFAULT
)

// Field flags (the kernel's HIST_FIELD_FL_*), only those ktrace prints
// or checks.
const (
	flHex = 1 << iota
	flSym
	flSymOffset
	flExecname
	flSyscall
	flLog2
	flUsecs
	flBucket
	flPercent
	flGraph
	flStacktrace
	flCPU
	flTimestamp
	flHitcount
	flKey
	flVar
	flString
	flVarRef
	flExpr
	flConst
	flAlias
)

// HistField is a key, a value or a variable of a hist trigger.
type HistField struct {
	Name    string // the event field ("" for common_cpu, common_timestamp, hitcount)
	Var     string // a variable's name
	Flags   int
	Buckets uint64
	Size    int
	// Signed: the event field is signed (keys compare as signed numbers).
	Signed bool
	// Field is the event field read (nil for common_cpu,
	// common_timestamp, hitcount and the stacktrace).
	Field *filter.Field
	// legacy prints the stacktrace key as 6.1 does ("stacktrace").
	legacy bool
	// log2Wraps: the kernel's .log2 takes a value above 2^63 to 0
	// (grammar.Dialect.Log2Wraps).
	log2Wraps bool
	// cpuName is the name a CPU field was given ("cpu", "CPU" or
	// "common_cpu"): the generic field's, which the hist file and sort
	// keys name it by (the trigger line prints common_cpu).
	cpuName string
	// Type is the C type of the value (the event field's, "u64" for
	// timestamps and constants, an expression's first operand's), which
	// synthetic-event parameters are checked against.
	Type string
	// Expr is an expression's text ("a+b"), a reference's variable name.
	Expr string
	// Op and Operands make an expression (Op is '+', '-', '*', '/', or
	// 'u' for unary minus); a variable defined as a reference holds the
	// reference as its operand.
	Op       byte
	Operands []*HistField
	// Const is a numeric constant's value.
	Const uint64
	// RefVar is the variable a reference (or an alias) reads; RefSystem
	// and RefEvent are set when the reference named them.
	RefVar              *HistField
	RefSystem, RefEvent string
	// owner is the trigger a variable belongs to.
	owner *Hist
}

// IsComputed reports a field ktrace's programs cannot produce: an
// expression, a constant, or a variable reference.
func (f *HistField) IsComputed() bool { return f.Flags&(flExpr|flConst|flVarRef|flAlias) != 0 }

// IsCPU, IsStacktrace and IsTimestamp tell the fields that are no event
// field (common_cpu, the stack trace, common_timestamp); Log2 and Usecs
// report the .log2 and .usecs modifiers.
func (f *HistField) IsCPU() bool        { return f.Flags&flCPU != 0 }
func (f *HistField) IsStacktrace() bool { return f.Flags&flStacktrace != 0 }
func (f *HistField) IsTimestamp() bool  { return f.Flags&flTimestamp != 0 }
func (f *HistField) Log2() bool         { return f.Flags&flLog2 != 0 }
func (f *HistField) Usecs() bool        { return f.Flags&flUsecs != 0 }

// Log2Wraps reports a .log2 field whose kernel takes the values above
// 2^63 to 2^0 rather than 2^64 (grammar.Dialect.Log2Wraps).
func (f *HistField) Log2Wraps() bool { return f.log2Wraps }

// IsHitcount reports a hitcount value column (hitcount.percent,
// hitcount.graph).
func (f *HistField) IsHitcount() bool { return f.Flags&flHitcount != 0 }

// IsSyscall reports the .syscall modifier, whose key prints the system
// call's name.
func (f *HistField) IsSyscall() bool { return f.Flags&flSyscall != 0 }

// print is hist_field_print.
func (f *HistField) print(b *strings.Builder) {
	if f.Var != "" {
		b.WriteString(f.Var + "=")
	}
	switch {
	case f.Flags&flCPU != 0:
		b.WriteString("common_cpu")
	case f.Flags&flConst != 0:
		fmt.Fprintf(b, "%d", f.Const)
	case f.Flags&(flVarRef|flAlias) != 0:
		b.WriteString("$" + f.name())
	case f.Flags&flExpr != 0:
		b.WriteString(f.Expr)
	case f.Flags&flStacktrace != 0 && f.Name == "" && f.legacy:
		b.WriteString("stacktrace")
	case f.Flags&flStacktrace != 0 && f.Name == "":
		b.WriteString("common_stacktrace")
	case f.Name != "":
		b.WriteString(f.Name)
	case f.Flags&flTimestamp != 0:
		b.WriteString("common_timestamp")
	case f.Flags&flHitcount != 0:
		b.WriteString("hitcount")
	}
	if f.Flags&(flStacktrace|flVarRef|flExpr) == 0 {
		if m := f.modifier(); m != "" {
			b.WriteString("." + m)
		}
	}
	if f.Buckets != 0 {
		fmt.Fprintf(b, "=%d", f.Buckets)
	}
}

// modifierNames are the modifiers get_hist_field_flags prints, in its
// order: a field prints the first whose flag it has.
var modifierNames = [...]struct {
	flag int
	name string
}{
	{flHex, "hex"}, {flSym, "sym"}, {flSymOffset, "sym-offset"},
	{flExecname, "execname"}, {flSyscall, "syscall"}, {flLog2, "log2"},
	{flUsecs, "usecs"}, {flPercent, "percent"}, {flGraph, "graph"},
	{flBucket, "buckets"},
}

// modifier is get_hist_field_flags.
func (f *HistField) modifier() string {
	for _, m := range modifierNames {
		if f.Flags&m.flag != 0 {
			return m.name
		}
	}
	return ""
}

// name is hist_field_name: how sort keys name the field.
func (f *HistField) name() string {
	switch {
	case f.Flags&flCPU != 0 && f.cpuName != "":
		return f.cpuName
	case f.Name != "":
		return f.Name
	case f.Flags&flAlias != 0 && len(f.Operands) == 1:
		return f.Operands[0].name()
	case f.Flags&flCPU != 0:
		return "common_cpu"
	case f.Flags&flVarRef != 0 && f.RefSystem != "":
		return f.RefSystem + "." + f.RefEvent + "." + f.Expr
	case f.Flags&(flExpr|flVarRef) != 0:
		return f.Expr
	case f.Flags&flTimestamp != 0:
		return "common_timestamp"
	case f.Flags&flHitcount != 0:
		return "hitcount"
	case f.Flags&flStacktrace != 0 && f.legacy:
		return "stacktrace"
	case f.Flags&flStacktrace != 0:
		return "common_stacktrace"
	}
	return ""
}

type sortKey struct {
	idx        int // 0: hitcount, else 1 + position among values then keys
	descending bool
}

// Hist is a hist trigger's definition.
type Hist struct {
	Name       string // name= (shared histogram), "" for none
	Keys, Vals []*HistField
	Vars       []*HistField
	sorts      []sortKey
	Bits       int
	NoHitcount bool
	Clock      string
	timestamps bool
	pause      bool
	cont       bool
	clear      bool
	// Actions are the handlers (onmatch, onmax, onchange) in the order
	// written.
	Actions []*Action
	// refs are the trigger's variable references (to its own variables
	// and to other triggers'); a trigger whose variables another trigger
	// references cannot be removed.
	refs []*HistField
	// hidden are the hist triggers made on other events for action
	// parameters naming their fields; they go with this trigger.
	hidden []hiddenHist
	// The attribute texts, until the fields are made from them.
	keysStr, valsStr, sortStr *string
	assigns, actionStrs       []string
}

// hiddenHist is a hist trigger the kernel made on another event for a
// field variable: the event and the command that made it.
type hiddenHist struct {
	system, event, cmd string
}

// References reports whether h reads a variable of o (o != h).
func (h *Hist) References(o *Hist) bool {
	if h == o {
		return false
	}
	for _, r := range h.refs {
		if r.RefVar != nil && r.RefVar.owner == o {
			return true
		}
	}
	return false
}

// SyntheticEvents lists the synthetic events h's actions generate.
func (h *Hist) SyntheticEvents() []string {
	var out []string
	for _, a := range h.Actions {
		if a.Kind == actionTrace && a.synth != "" {
			out = append(out, a.synth)
		}
	}
	return out
}

// spec is the trigger-file line without the filter and state.
func (h *Hist) spec() string {
	var b strings.Builder
	b.WriteString("hist:")
	if h.Name != "" {
		b.WriteString(h.Name + ":")
	}
	b.WriteString("keys=")
	for i, k := range h.Keys {
		if i > 0 {
			b.WriteByte(',')
		}
		if k.Flags&flStacktrace != 0 && k.Name != "" {
			b.WriteString(k.Name + ".stacktrace")
		} else {
			k.print(&b)
		}
	}
	b.WriteString(":vals=")
	show := false
	if !h.NoHitcount {
		b.WriteString("hitcount")
		show = true
	}
	for _, v := range h.Vals {
		if show {
			b.WriteByte(',')
		}
		v.print(&b)
		show = true
	}
	if len(h.Vars) > 0 {
		b.WriteByte(':')
		for i, v := range h.Vars {
			if i > 0 {
				b.WriteByte(',')
			}
			v.print(&b)
		}
	}
	b.WriteString(":sort=")
	all := h.sortable()
	for i, s := range h.sorts {
		if i > 0 {
			b.WriteByte(',')
		}
		if s.idx == 0 {
			b.WriteString("hitcount")
		} else {
			all[s.idx-1].print(&b)
		}
		if s.descending {
			b.WriteString(".descending")
		}
	}
	fmt.Fprintf(&b, ":size=%d", 1<<h.Bits)
	if h.timestamps {
		b.WriteString(":clock=" + h.Clock)
	}
	if h.NoHitcount {
		b.WriteString(":nohitcount")
	}
	for _, a := range h.Actions {
		a.print(&b)
	}
	return b.String()
}

// compatibleField is the kernel's compatible_field: two event fields a
// shared histogram may read alike.
func compatibleField(a, b *filter.Field) bool {
	if a == b {
		return true
	}
	if a == nil || b == nil {
		return false
	}
	return a.Name == b.Name && a.Type == b.Type && a.Size == b.Size && a.Signed == b.Signed
}

// sortable lists the values then the keys, as sort keys index them.
func (h *Hist) sortable() []*HistField {
	return append(append([]*HistField(nil), h.Vals...), h.Keys...)
}

// same is hist_trigger_match without the name: same keys, values,
// variables, sort keys and filter text (the size does not count). The
// event fields read must be compatible_field's: the same name, C type,
// size and signedness, so a named histogram is not shared between events
// whose fields differ in type only ("size_t count" of sys_enter_write
// and a kprobe's "u64 count"; seen on 6.1 and 6.12).
func (h *Hist) same(o *Hist) bool {
	eq := func(a, b []*HistField) bool {
		if len(a) != len(b) {
			return false
		}
		for i := range a {
			if a[i].Name != b[i].Name || a[i].Var != b[i].Var || a[i].Flags != b[i].Flags || a[i].Buckets != b[i].Buckets {
				return false
			}
			if !compatibleField(a[i].Field, b[i].Field) {
				return false
			}
		}
		return true
	}
	if !eq(h.Keys, o.Keys) || !eq(h.Vals, o.Vals) || !eq(h.Vars, o.Vars) || len(h.sorts) != len(o.sorts) || h.NoHitcount != o.NoHitcount {
		return false
	}
	for i := range h.sorts {
		if h.sorts[i] != o.sorts[i] {
			return false
		}
	}
	if len(h.Actions) != len(o.Actions) {
		return false
	}
	for i, a := range h.Actions {
		if !a.same(o.Actions[i]) {
			return false
		}
	}
	return true
}

// histErr is a hist error for error_log: its message and caret.
type histErr struct {
	msg string
	pos int
}

// The hist error messages (hist_err_text) ktrace reports.
const (
	histErrNamedMismatch    = "Named hist trigger doesn't match existing named trigger (includes variables)"
	histErrTriggerExists    = "Hist trigger already exists"
	histErrTriggerENOENT    = "Can't clear or continue a nonexistent hist trigger"
	histErrSetClock         = "Couldn't set trace_clock"
	histErrBadFieldModifier = "Invalid field modifier"
	histErrFieldNotFound    = "Couldn't find field"
	histErrEmptyAssignment  = "Empty assignment"
	histErrInvalidSortMod   = "Invalid sort modifier"
	histErrEmptySortField   = "Empty sort field"
	histErrTooManySort      = "Too many sort fields (Max = 2)"
	histErrInvalidSortField = "Sort field must be a key or a val"
	histErrTooManyVars      = "Too many variables defined"
	histErrNeedNoHCVal      = "Non-hitcount value is required for 'nohitcount'"
)

// histParser holds one hist write's state: the command as logged, where
// its errors go and the error_log entries logged so far (the kernel logs
// some errors and goes on, and keeps what it logged on success).
type histParser struct {
	cmd  string // "hist:" + the parameter, as last_cmd holds it
	loc  string // "hist:SYSTEM:EVENT"
	ev   *Event
	d    *grammar.Dialect
	list *List // the event's triggers
	h    *Hist // the trigger being made
	logs []events.LogEntry
	// varDefs are the trigger's variable definitions, their text as the
	// kernel's in-place parsing leaves it.
	varDefs []varDef
	// mapVars counts the variables of the trigger's map while its
	// actions are made.
	mapVars int
}

type varDef struct{ name, expr string }

func (p *histParser) errpos(s string) int {
	if i := strings.Index(p.cmd, s); i >= 0 {
		return i
	}
	return 0
}

// log adds an error_log entry.
func (p *histParser) log(msg string, pos int) {
	p.logs = append(p.logs, events.LogEntry{Subsys: p.loc, Msg: msg, Cmd: p.cmd, Pos: pos})
}

// fail logs msg and fails with errno.
func (p *histParser) fail(errno syscall.Errno, msg string, pos int) Result {
	p.log(msg, pos)
	return p.errno(errno)
}

// errno fails with errno, keeping what was logged.
func (p *histParser) errno(errno syscall.Errno) Result {
	return Result{Errno: errno, Logs: p.logs}
}

// parseHist is event_hist_trigger_parse.
func (l *List) parseHist(buff, glob string, pf *string, remove bool, ev *Event) Result {
	paramAndFilter := ""
	if pf != nil {
		paramAndFilter = *pf
	}
	p := &histParser{cmd: "hist:" + paramAndFilter, loc: "hist:" + ev.System + ":" + ev.Name, ev: ev, d: ev.Env.Dialect, list: l}
	if pf == nil {
		return Result{Errno: syscall.EINVAL}
	}
	return p.parse(paramAndFilter, remove)
}

// parse parses and applies one hist command on p.list. The kernel also
// runs it itself, for the histograms it makes on other events for field
// variables: those log under the outer command (p.cmd and p.loc).
func (p *histParser) parse(paramAndFilter string, remove bool) Result {
	ev, l := p.ev, p.list
	// Split "TRIGGER if FILTER": an "if" with a blank on both sides.
	param := paramAndFilter
	var filt *string
	for at := 0; ; {
		i := strings.Index(paramAndFilter[at:], "if")
		if i < 0 {
			break
		}
		i += at
		if i == 0 {
			return p.errno(syscall.EINVAL)
		}
		if c := paramAndFilter[i-1]; c != ' ' && c != '\t' {
			at = i + 1
			continue
		}
		if i >= len(paramAndFilter)-len("if")-1 {
			return p.errno(syscall.EINVAL)
		}
		if c := paramAndFilter[i+2]; c != ' ' && c != '\t' {
			at = i + 1
			continue
		}
		f := strings.TrimFunc(paramAndFilter[i:], isSpaceRune)
		filt = &f
		param = strings.TrimFunc(paramAndFilter[:i-1], isSpaceRune)
		break
	}
	param = strings.ReplaceAll(param, ".sym-offset", ".symXoffset")
	h, r := p.attrs(param)
	if r.Errno != 0 {
		return r
	}
	p.h = h
	if r := p.parseActions(h); r.Errno != 0 {
		return r
	}
	if r := p.fields(h, remove); r.Errno != 0 {
		return r
	}
	if r := p.sortKeys(h); r.Errno != 0 {
		return r
	}
	t := &Trigger{Cmd: "hist", Hist: h, Count: -1}
	if r := setFilter(t, filt, ev); r.Errno != 0 {
		r.Logs = append(p.logs, r.Logs...)
		return r
	}
	done := Result{Logs: p.logs}
	match := func(x *Trigger) bool {
		return x.Hist != nil && x.Hist.same(h) && x.FilterText == t.FilterText && x.Hist.Name == h.Name
	}
	if remove {
		for _, x := range l.Triggers {
			if !match(x) {
				continue
			}
			if ev.Referenced != nil && ev.Referenced(x.Hist) {
				return p.errno(syscall.EBUSY)
			}
			l.remove(func(y *Trigger) bool { return y == x })
			p.dropHidden(x.Hist)
			break
		}
		return done
	}
	if h.pause || h.cont || h.clear {
		for _, x := range l.Triggers {
			if !match(x) {
				continue
			}
			switch {
			case h.pause:
				x.Paused = true
			case h.cont:
				x.Paused = false
			default:
				x.Clears++
			}
			return done
		}
	}
	if r := p.createActions(h); r.Errno != 0 {
		return r
	}
	if h.Name != "" && ev.Named != nil {
		if o := ev.Named(h.Name); o != nil && !o.same(h) {
			return p.fail(syscall.EINVAL, histErrNamedMismatch, p.errpos(h.Name))
		}
	}
	for _, x := range l.Triggers {
		if match(x) {
			return p.fail(syscall.EEXIST, histErrTriggerExists, 0)
		}
	}
	if h.cont || h.clear {
		return p.fail(syscall.ENOENT, histErrTriggerENOENT, 0)
	}
	if h.timestamps && ev.SetClock != nil && !ev.SetClock(h.Clock) {
		return p.fail(syscall.EINVAL, histErrSetClock, p.errpos(h.Clock))
	}
	t.Paused = h.pause
	l.Triggers = append(l.Triggers, t)
	return Result{Logs: p.logs}
}

// dropHidden removes the field-variable histograms trigger h made on
// other events (unregister_field_var_hists).
func (p *histParser) dropHidden(h *Hist) {
	for _, hh := range h.hidden {
		if p.ev.ListOf == nil {
			return
		}
		ol, oev := p.ev.ListOf(hh.system, hh.event)
		if ol == nil {
			continue
		}
		q := &histParser{cmd: p.cmd, loc: p.loc, ev: oev, d: p.d, list: ol}
		q.parse(hh.cmd, true)
	}
}

// attrs is parse_hist_trigger_attrs.
func (p *histParser) attrs(param string) (*Hist, Result) {
	h := &Hist{Bits: defaultBits, Clock: "global"}
	var lists [3]*string // keys, vals, sort
	for _, str := range strings.Split(param, ":") {
		if eq := strings.IndexByte(str, '='); eq >= 0 {
			if eq == len(str)-1 {
				return nil, p.fail(syscall.EINVAL, histErrEmptyAssignment, p.errpos(str))
			}
			if list, s, ok := listAssignment(str); ok {
				lists[list] = &s
				continue
			}
			switch {
			case strings.HasPrefix(str, "name="):
				h.Name = str
			case strings.HasPrefix(str, "clock="):
				h.Clock = strings.TrimFunc(str[6:], isSpaceRune)
			case strings.HasPrefix(str, "size="):
				v, err := grammar.ParseUint64(str[5:], 0)
				if err != nil {
					return nil, p.errno(syscall.EINVAL)
				}
				bits := 0
				for 1<<bits < v {
					bits++
				}
				if bits < minBits || bits > maxBits {
					return nil, p.errno(syscall.EINVAL)
				}
				h.Bits = bits
			default:
				if len(h.assigns) == maxVars {
					return nil, p.fail(syscall.EINVAL, histErrTooManyVars, p.errpos(str))
				}
				h.assigns = append(h.assigns, str)
			}
			continue
		}
		switch {
		case p.d.HistNoHitcount && (str == "nohitcount" || str == "NOHC"):
			h.NoHitcount = true
		case str == "pause":
			h.pause = true
		case str == "cont" || str == "continue":
			h.cont = true
		case str == "clear":
			h.clear = true
		case len(h.actionStrs) < maxActions && (strings.HasPrefix(str, "onmatch(") || strings.HasPrefix(str, "onmax(") || strings.HasPrefix(str, "onchange(")):
			h.actionStrs = append(h.actionStrs, str)
		default:
			return nil, p.errno(syscall.EINVAL)
		}
	}
	if lists[listKeys] == nil {
		return nil, p.errno(syscall.EINVAL)
	}
	h.keysStr, h.valsStr, h.sortStr = lists[listKeys], lists[listVals], lists[listSort]
	return h, Result{}
}

// The field lists a hist trigger's assignments name.
const (
	listKeys = iota
	listVals
	listSort
)

// listAssignments are the assignments of parse_assignment that set a
// field list, with the list each sets.
var listAssignments = [...]struct {
	prefix string
	list   int
}{
	{"key=", listKeys}, {"keys=", listKeys},
	{"val=", listVals}, {"vals=", listVals}, {"values=", listVals},
	{"sort=", listSort},
}

// listAssignment reports which field list the assignment str sets, and
// the text assigned.
func listAssignment(str string) (list int, val string, ok bool) {
	for _, a := range listAssignments {
		if v, ok := strings.CutPrefix(str, a.prefix); ok {
			return a.list, v, true
		}
	}
	return 0, "", false
}
