package trigger

import (
	"fmt"
	"strings"
	"syscall"

	"github.com/ktrace-dev/ktrace/events"
	"github.com/ktrace-dev/ktrace/filter"
	"github.com/ktrace-dev/ktrace/grammar"
	"github.com/ktrace-dev/ktrace/synth"
)

// maxWrite is PAGE_SIZE: a trigger write of this size or more is EINVAL.
const maxWrite = 4096

// Commands in the kernel's registration order (the trigger file's list
// of available triggers).
var Commands = []string{"traceon", "traceoff", "snapshot", "stacktrace", "enable_event", "disable_event", "enable_hist", "disable_hist", "hist"}

// kind is the kernel's trigger type: two commands of one kind cannot
// coexist on an event (per target for the enable/disable kinds).
type kind int

const (
	kindTraceOnOff kind = iota
	kindSnapshot
	kindStacktrace
	kindEventEnable
	kindHistEnable
	kindHist
)

func kindOf(cmd string) kind {
	switch cmd {
	case "traceon", "traceoff":
		return kindTraceOnOff
	case "snapshot":
		return kindSnapshot
	case "stacktrace":
		return kindStacktrace
	case "enable_event", "disable_event":
		return kindEventEnable
	case "enable_hist", "disable_hist":
		return kindHistEnable
	}
	return kindHist
}

// Trigger is one trigger of an event.
type Trigger struct {
	Cmd string
	// Count is how many more times it fires; -1 is unlimited.
	Count int64
	// Target is "SYSTEM:EVENT" of enable/disable triggers.
	Target string
	// FilterText is the "if" expression as stored (nil Filter: none).
	FilterText string
	Filter     *filter.Filter
	// Hist is a hist trigger's definition.
	Hist   *Hist
	Paused bool
	// Clears counts the "clear" commands applied to a hist trigger: a
	// backend that keeps its histogram empties it when this changes.
	Clears int
}

// Saved is a trigger list's state, to undo a change (Save, Restore).
type Saved struct {
	triggers []*Trigger
	state    []Trigger
}

// Triggers are the triggers the list held when it was saved.
func (s Saved) Triggers() []*Trigger { return s.triggers }

// Save records l's triggers and their state.
func (l *List) Save() Saved {
	s := Saved{triggers: append([]*Trigger(nil), l.Triggers...)}
	for _, t := range l.Triggers {
		s.state = append(s.state, *t)
	}
	return s
}

// Restore puts l back as Save found it.
func (l *List) Restore(s Saved) {
	l.Triggers = s.triggers
	for i, t := range l.Triggers {
		*t = s.state[i]
	}
}

// Line is the trigger's line in the trigger file.
func (t *Trigger) Line() string {
	var b strings.Builder
	if t.Hist != nil {
		b.WriteString(t.Hist.spec())
	} else {
		b.WriteString(t.Cmd)
		if t.Target != "" {
			b.WriteString(":" + t.Target)
		}
		if t.Count == -1 {
			b.WriteString(":unlimited")
		} else {
			fmt.Fprintf(&b, ":count=%d", t.Count)
		}
	}
	if t.Filter != nil || t.FilterText != "" {
		b.WriteString(" if " + t.FilterText)
	}
	if t.Hist != nil {
		if t.Paused {
			b.WriteString(" [paused]")
		} else {
			b.WriteString(" [active]")
		}
	}
	return b.String()
}

// Event is what parsing needs to know about the trigger's event and the
// kernel.
type Event struct {
	System, Name string
	// Fields are the event's fields (from its format), for filters and
	// hist keys.
	Fields *filter.Event
	Env    *filter.Env
	// Exists reports whether SYSTEM:EVENT names an event (enable_event
	// and friends).
	Exists func(system, event string) bool
	// Named finds the hist trigger named name on any event (name=),
	// nil when none.
	Named func(name string) *Hist
	// Hists lists the hist triggers of SYSTEM:EVENT in list order
	// (variable lookups), ok false when there is no such event.
	Hists func(system, event string) (hists []*Hist, ok bool)
	// AllHists lists every event's hist triggers.
	AllHists func() []EventHists
	// Referenced reports whether a hist trigger of any event reads a
	// variable of h.
	Referenced func(h *Hist) bool
	// ListOf is the trigger list of another event, and that event, for
	// the histograms the kernel makes there itself (nil when there is no
	// such event).
	ListOf func(system, event string) (*List, *Event)
	// Synthetic finds a synthetic event's definition (onmatch().trace()),
	// nil when there is none.
	Synthetic func(name string) *synth.Event
	// SnapshotTaken reports whether a hist trigger of any event already
	// has a snapshot() action (the instance has one conditional snapshot).
	SnapshotTaken func() bool
	// SetClock sets the instance's trace clock (a hist trigger using
	// common_timestamp does), false when the clock cannot be set.
	SetClock func(name string) bool
}

// EventHists is one event's hist triggers.
type EventHists struct {
	System, Name string
	Hists        []*Hist
}

// Hists lists l's hist triggers.
func (l *List) Hists() []*Hist {
	var out []*Hist
	for _, t := range l.Triggers {
		if t.Hist != nil {
			out = append(out, t.Hist)
		}
	}
	return out
}

// List is one event's triggers, in the kernel's list order.
type List struct {
	Triggers []*Trigger
}

// Text is the trigger file: one line per trigger, or the available
// commands when there is none.
func (l *List) Text() string {
	if len(l.Triggers) == 0 {
		return "# Available triggers:\n# " + strings.Join(Commands, " ") + "\n"
	}
	var b strings.Builder
	for _, t := range l.Triggers {
		b.WriteString(t.Line())
		b.WriteByte('\n')
	}
	return b.String()
}

// ClearHist is an O_TRUNC open of the trigger file: the kernel's
// unreg_all of the enable_hist/disable_hist commands removes those
// triggers, and that of the hist command the hist triggers, unless
// another trigger reads a variable of one of them (referenced may be
// nil); then no hist trigger goes. Other triggers stay. It returns the
// hist triggers removed.
func (l *List) ClearHist(referenced func(*Hist) bool) (removed []*Hist) {
	keepHists := false
	if referenced != nil {
		for _, t := range l.Triggers {
			if t.Hist != nil && referenced(t.Hist) {
				keepHists = true
				break
			}
		}
	}
	out := l.Triggers[:0]
	for _, t := range l.Triggers {
		switch {
		case kindOf(t.Cmd) == kindHistEnable:
		case t.Hist != nil && !keepHists:
			removed = append(removed, t.Hist)
		default:
			out = append(out, t)
		}
	}
	l.Triggers = out
	return removed
}

// DropHidden removes the hist triggers the kernel made on other events
// for h's field variables, once h is gone (ev is h's event).
func DropHidden(h *Hist, ev *Event) {
	p := &histParser{ev: ev, d: ev.Env.Dialect}
	p.dropHidden(h)
}

// HasSnapshot reports whether h has a snapshot() action.
func (h *Hist) HasSnapshot() bool {
	for _, a := range h.Actions {
		if a.Kind == actionSnapshot {
			return true
		}
	}
	return false
}

// Targets reports whether an enable/disable trigger of l acts on
// SYSTEM:EVENT target.
func (l *List) Targets(target string) bool {
	for _, t := range l.Triggers {
		if t.Target == target {
			return true
		}
	}
	return false
}

// Result is the outcome of a write: the errno (0 for success) and the
// error_log entries it added.
type Result struct {
	Errno syscall.Errno
	Logs  []events.LogEntry
}

// Write applies one write(2) of p to the trigger file.
func (l *List) Write(p []byte, ev *Event) Result {
	if len(p) >= maxWrite {
		return Result{Errno: syscall.EINVAL}
	}
	s := string(p)
	if i := strings.IndexByte(s, 0); i >= 0 {
		s = s[:i]
	}
	s = strings.TrimFunc(s, isSpaceRune)
	buff := s
	cmd, next, found := cutAny(buff, ": \t")
	var param *string
	if found {
		rest := strings.TrimLeftFunc(next, isSpaceRune)
		if rest != "" {
			param = &rest
		}
	}
	glob := cmd
	cmd = strings.TrimPrefix(cmd, "!")
	remove := strings.HasPrefix(glob, "!")
	for _, c := range Commands {
		if c != cmd {
			continue
		}
		switch kindOf(cmd) {
		case kindHist:
			return l.parseHist(buff, glob, param, remove, ev)
		case kindEventEnable, kindHistEnable:
			return l.parseEnable(cmd, param, remove, ev)
		default:
			return l.parseSimple(cmd, param, remove, ev)
		}
	}
	return Result{Errno: syscall.EINVAL}
}

func isSpaceRune(r rune) bool { return r == ' ' || (r >= '\t' && r <= '\r') }

// cutAny is strsep: s up to the first byte of seps, and the rest after it.
func cutAny(s, seps string) (before, after string, found bool) {
	if i := strings.IndexAny(s, seps); i >= 0 {
		return s[:i], s[i+1:], true
	}
	return s, "", false
}

// separateFilter is event_trigger_separate_filter: a parameter (a count,
// or SYSTEM:EVENT[:COUNT]) then an optional filter after a blank. Without
// a required parameter, text not starting with a digit is all filter.
func separateFilter(pf *string, paramRequired bool) (param, filt *string, errno syscall.Errno) {
	if pf == nil {
		if paramRequired {
			return nil, nil, syscall.EINVAL
		}
		return nil, nil, 0
	}
	s := *pf
	if !paramRequired && !(s[0] >= '0' && s[0] <= '9') {
		return nil, &s, 0
	}
	p, rest, found := cutAny(s, " \t")
	param = &p
	if found {
		rest = strings.TrimLeftFunc(rest, isSpaceRune)
		if rest != "" {
			filt = &rest
		}
	}
	return param, filt, 0
}

// parseNum is event_trigger_parse_num: the count before any ':'.
func parseNum(param *string) (int64, syscall.Errno) {
	if param == nil {
		return -1, 0
	}
	num, _, _ := strings.Cut(*param, ":")
	if num == "" {
		return 0, syscall.EINVAL
	}
	v, err := grammar.ParseUint64(num, 0)
	if err != nil {
		if err == grammar.ErrRange {
			return 0, syscall.ERANGE
		}
		return 0, syscall.EINVAL
	}
	return int64(v), 0
}

// setFilter is set_trigger_filter: "if EXPR", EXPR parsed for this
// event. 6.12 logs filter errors to error_log; 6.1 does not.
func setFilter(t *Trigger, filt *string, ev *Event) Result {
	if filt == nil {
		return Result{}
	}
	word, rest, found := cutAny(*filt, " \t")
	if word != "if" || !found {
		return Result{Errno: syscall.EINVAL}
	}
	f, err := filter.Parse(rest, ev.Fields, ev.Env)
	if err != nil {
		r := Result{Errno: err.Errno}
		if ev.Env.Dialect.TriggerFilterLog {
			r.Logs = append(r.Logs, events.LogEntry{Subsys: grammar.FilterSubsys, Msg: err.Message(), Cmd: rest, Pos: err.LogPos()})
		}
		return r
	}
	t.Filter, t.FilterText = f, rest
	return Result{}
}

// parseSimple handles traceon, traceoff, snapshot and stacktrace.
func (l *List) parseSimple(cmd string, pf *string, remove bool, ev *Event) Result {
	param, filt, errno := separateFilter(pf, false)
	if errno != 0 {
		return Result{Errno: errno}
	}
	t := &Trigger{Cmd: cmd}
	if remove {
		l.remove(func(x *Trigger) bool { return kindOf(x.Cmd) == kindOf(cmd) })
		return Result{}
	}
	n, errno := parseNum(param)
	if errno != 0 {
		return Result{Errno: errno}
	}
	t.Count = n
	if r := setFilter(t, filt, ev); r.Errno != 0 {
		return r
	}
	for _, x := range l.Triggers {
		if kindOf(x.Cmd) == kindOf(cmd) {
			return Result{Errno: syscall.EEXIST}
		}
	}
	l.Triggers = append([]*Trigger{t}, l.Triggers...)
	return Result{}
}

// parseEnable handles enable_event, disable_event, enable_hist and
// disable_hist.
func (l *List) parseEnable(cmd string, pf *string, remove bool, ev *Event) Result {
	if pf == nil {
		return Result{Errno: syscall.EINVAL}
	}
	param, filt, errno := separateFilter(pf, true)
	if errno != 0 {
		return Result{Errno: errno}
	}
	system, rest, ok := strings.Cut(*param, ":")
	if !ok {
		return Result{Errno: syscall.EINVAL}
	}
	event, count, hasCount := strings.Cut(rest, ":")
	if ev.Exists == nil || !ev.Exists(system, event) {
		return Result{Errno: syscall.EINVAL}
	}
	target := system + ":" + event
	same := func(x *Trigger) bool { return kindOf(x.Cmd) == kindOf(cmd) && x.Target == target }
	if remove {
		l.remove(same)
		return Result{}
	}
	var cp *string
	if hasCount {
		cp = &count
	}
	n, errno := parseNum(cp)
	if errno != 0 {
		return Result{Errno: errno}
	}
	t := &Trigger{Cmd: cmd, Target: target, Count: n}
	if r := setFilter(t, filt, ev); r.Errno != 0 {
		return r
	}
	for _, x := range l.Triggers {
		if same(x) {
			return Result{Errno: syscall.EEXIST}
		}
	}
	l.Triggers = append([]*Trigger{t}, l.Triggers...)
	return Result{}
}

func (l *List) remove(match func(*Trigger) bool) {
	for i, x := range l.Triggers {
		if match(x) {
			l.Triggers = append(l.Triggers[:i:i], l.Triggers[i+1:]...)
			return
		}
	}
}
