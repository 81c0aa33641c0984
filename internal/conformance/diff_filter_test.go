package conformance

import (
	"strings"
)

// Random filters and triggers for the differential: writes to an event's
// filter and trigger files, on a kprobe event with number and string
// fields and on a static event, composed from the forms the kernel's
// filter and trigger parsers branch on, valid and invalid.

// diffEventSetup defines the events the filter and trigger cases write to,
// on functions nothing in the guest calls (a hit would count in a trigger
// the emulation cannot fire).
var diffEventSetup = []string{
	"kprobe_events:p:kprobes/f __x64_sys_sync a=%di:u64 b=%si:s32 s=+0(%si):string",
	"kprobe_events:p:kprobes/g __x64_sys_syncfs c=%dx:u64",
}

// diffEvents are the events written to, with their fields.
var diffEvents = []struct {
	dir    string
	fields []string
}{
	{"events/kprobes/f", []string{"a", "b", "s", "__probe_ip"}},
	{"events/sched/sched_switch", []string{"prev_comm", "prev_pid", "prev_prio", "prev_state", "next_comm", "next_pid"}},
}

// filterCase is a write to an event's filter or trigger file.
func (g *lineGen) filterCase() Case {
	ev := diffEvents[g.r.IntN(len(diffEvents))]
	c := Case{Setup: append([]string(nil), diffEventSetup...)}
	if g.chance(0.4) {
		c.File, c.Line = ev.dir+"/filter", g.filterExpr(ev.fields, 0)
		return c
	}
	// Triggers go on the kprobe: the static event fires on its own, and
	// its histograms and counts would move.
	ev = diffEvents[0]
	c.File = ev.dir + "/trigger"
	if g.chance(0.25) {
		// An existing trigger: duplicates, pause/cont/clear, removal.
		c.Setup = append(c.Setup, c.File+":"+g.trigger(ev.fields))
	}
	if g.chance(0.2) {
		// Another event's variables, and a synthetic event for actions.
		c.Setup = append(c.Setup, "events/kprobes/g/trigger:hist:keys=c:gv=c:ts0=common_timestamp.usecs",
			"synthetic_events:ev u64 v; u64 w")
	}
	c.Line = g.trigger(ev.fields)
	return c
}

// filterExpr is an event filter expression.
func (g *lineGen) filterExpr(fields []string, depth int) string {
	var e string
	switch x := g.r.Float64(); {
	case depth < 2 && x < 0.15:
		e = g.filterExpr(fields, depth+1) + g.pick(" && ", " || ", "&&", " ||") + g.filterExpr(fields, depth+1)
	case depth < 2 && x < 0.22:
		e = "(" + g.filterExpr(fields, depth+1) + g.pick(")", ")", "")
	case depth < 2 && x < 0.27:
		e = "!" + g.pick("", " ", "(") + g.filterExpr(fields, depth+1) + g.pick("", "", ")")
	default:
		e = g.predicate(fields)
	}
	if depth == 0 && g.chance(0.05) {
		e += g.pick(" &&", " ||", ")", " (", "  ")
	}
	return e
}

// predicate is FIELD OP VALUE, or a malformed one.
func (g *lineGen) predicate(fields []string) string {
	f := g.pick(append(fields, "common_pid", "comm", "COMM", "cpu", "CPU", "common_flags", "nosuch", "a.function", "prev_pid.hex", "")...)
	op := g.pick("==", "!=", "<", "<=", ">", ">=", "&", "~", "=", "=~", "!~", "<>", "===")
	v := g.pick("0", "1", "-1", "42", "0x10", "0xffffffffffffffff", "18446744073709551616", "1a", "-", "",
		`"dd"`, `"d*"`, `"*d"`, `"*d*"`, `"d?"`, `"[ab]*"`, "dd", `"unterminated`, `'x'`, `"sh"`, "CPUS{0}", "CPUS{0-1", "vfs_read")
	sep := g.pick(" ", " ", "", "  ")
	return f + sep + op + sep + v
}

// trigger is one command written to a trigger file.
func (g *lineGen) trigger(fields []string) string {
	var b strings.Builder
	if g.chance(0.1) {
		b.WriteString("!")
	}
	switch x := g.r.Float64(); {
	case x < 0.55:
		b.WriteString(g.hist(fields))
	default:
		b.WriteString(g.pick("traceon", "traceoff", "snapshot", "stacktrace", "enable_event:kprobes:g", "disable_event:kprobes:g",
			"enable_hist:kprobes:g", "disable_hist:sched:nosuch", "enable_event:kprobes", "bogus", "enable_event:nosuch:ev"))
		if g.chance(0.3) {
			b.WriteString(g.pick(":5", ":0", ":x", ":1:2", ":-1"))
		}
	}
	if g.chance(0.3) {
		b.WriteString(g.pick(" if ", " if", "  if  ") + g.filterExpr(fields, 1))
	}
	return b.String()
}

// hist is a hist command: keys, values, sort keys and the other
// attributes, in random order and with random mistakes.
func (g *lineGen) hist(fields []string) string {
	field := func() string {
		f := g.pick(append(fields, "common_pid", "common_cpu", "cpu", "common_timestamp", "hitcount", "stacktrace", "common_stacktrace", "comm", "nosuch")...)
		if g.chance(0.35) {
			f += g.pick(".hex", ".sym", ".sym-offset", ".execname", ".syscall", ".log2", ".buckets=10", ".buckets=0", ".bucket=3", ".usecs", ".percent", ".graph", ".bogus", ".descending")
		}
		return f
	}
	list := func(max int) string {
		n := 1 + g.r.IntN(max)
		var parts []string
		for i := 0; i < n; i++ {
			parts = append(parts, field())
		}
		if g.chance(0.05) {
			parts = append(parts, "")
		}
		return strings.Join(parts, ",")
	}
	var parts []string
	if !g.chance(0.05) {
		parts = append(parts, g.pick("keys=", "keys=", "key=")+list(4))
	}
	if g.chance(0.4) {
		parts = append(parts, g.pick("vals=", "values=", "val=")+list(3))
	}
	if g.chance(0.3) {
		s := field()
		if g.chance(0.3) {
			s += "," + field()
		}
		if g.chance(0.3) {
			s += g.pick(".descending", ".ascending", ".bogus")
		}
		parts = append(parts, "sort="+s)
	}
	if g.chance(0.15) {
		parts = append(parts, "size="+g.pick("100", "128", "4096", "131072", "200000", "0x100", "x", "64"))
	}
	if g.chance(0.1) {
		parts = append(parts, "name="+g.pick("h1", "h2"))
	}
	if g.chance(0.15) {
		parts = append(parts, g.pick("pause", "cont", "continue", "clear", "nohitcount", "NOHC", "bogus", "x=", "clock=global"))
	}
	if g.chance(0.2) {
		// Variables: fields, timestamps, expressions, references.
		parts = append(parts, g.pick("ts0=common_timestamp.usecs", "ts0=common_timestamp", "v=a+b", "v=a-b*2", "v=a/0",
			"v=-(a)", "v=$ts0", "lat=common_timestamp.usecs-$ts0", "v=$nosuch", "v=kprobes.g.$gv", "v=a,w=b", "2v=a", "v=s"))
	}
	if g.chance(0.1) {
		parts = append(parts, g.pick("onmatch(kprobes.g).trace(ev,$v)", "onmatch(kprobes.g).ev(a,b)", "onmax($v).save(a,b)",
			"onchange($v).snapshot()", "onmax(v).save(a)", "onmatch(nosuch.ev).trace(ev,a)", "onmatch(kprobes.g", "onmax($v).bogus()"))
	}
	g.r.Shuffle(len(parts), func(i, j int) { parts[i], parts[j] = parts[j], parts[i] })
	return g.pick("hist:", "hist:", "hist ") + strings.Join(parts, ":")
}
