package tracefs

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/ktrace-dev/ktrace/kernel"
)

// Function commands: "FUNCS:COMMAND[:ARGS]" written to set_ftrace_filter
// runs COMMAND whenever one of FUNCS is called, whatever the current
// tracer: traceon and traceoff switch tracing_on, stacktrace records the
// caller's stack, enable_event and disable_event switch a static event
// (kept in soft mode meanwhile). A count limits how often the command
// acts. "!FUNCS:COMMAND[:COUNT]" removes it; the kernel tells a counted
// command from an uncounted one, and removing one finds the other not.

// FunctionProbe is one function command as a backend runs it: a
// command and its kind (counted or not) on a set of functions.
type FunctionProbe struct {
	// Command is traceon, traceoff, stacktrace, snapshot, enable_event,
	// disable_event, dump or cpudump.
	Command string
	// Counted is set for a command given a count.
	Counted bool
	Entries []FunctionProbeEntry
}

// FunctionProbeEntry is the command on one function.
type FunctionProbeEntry struct {
	Func kernel.FtraceRecord
	// Count is the count the command was given (Counted; -1 for an
	// empty count, which never runs out).
	Count int64
	// System and Event name the event enable_event and disable_event
	// switch.
	System, Event string
}

// FunctionProber is a backend that runs function commands.
type FunctionProber interface {
	// SetFunctionProbes runs the commands in probes (and no others);
	// a failure leaves the commands run before.
	SetFunctionProbes(probes []*FunctionProbe) error
	// FunctionProbeCounts reads what is left of the counts of a counted
	// command, by entry.
	FunctionProbeCounts(p *FunctionProbe) []int64
}

// funcProbe is one registered kind of command of the FS (a kernel
// ftrace_func_probe: the command, counted or not), with the functions it
// is on, in registration order.
type funcProbe struct {
	cmd     string
	counted bool
	entries []funcEntry
	fs      *FS
	// fp is what the backend was given last.
	fp *FunctionProbe
}

// funcEntry is a command on one function: its record index, and its
// count and event.
type funcEntry struct {
	rec           int
	count         int64
	system, event string
}

// hashOrder is the order set_ftrace_filter lists the command's entries
// in (ftraceHashOrder of their functions).
func (p *funcProbe) hashOrder(recs []kernel.FtraceRecord) []int {
	idx := make([]int, len(p.entries))
	for i, e := range p.entries {
		idx[i] = e.rec
	}
	return ftraceHashOrder(recs, idx)
}

// ftraceHashOrder is the order the kernel lists a function hash in (a
// command's functions, set_graph_function): it walks the buckets of a
// hash with about half as many buckets as entries (a power of two, at
// most 4,096: __move_hash), each bucket holding its functions in the
// reverse of their order in the 1,024-bucket hash they were collected
// in. idx are the functions' record indices; the result orders idx's
// positions.
func ftraceHashOrder(recs []kernel.FtraceRecord, idx []int) []int {
	n := len(idx)
	bits := uint(0)
	for v := n / 2; v > 0; v >>= 1 {
		bits++
	}
	bits = min(bits, ftraceHashMaxBits)
	bucket := func(ip uint64, bits uint) uint64 {
		if bits == 0 {
			return 0
		}
		return ip * goldenRatio64 >> (64 - bits)
	}
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	ip := func(i int) uint64 {
		r := recs[idx[i]]
		if r.Loc != 0 {
			return r.Loc
		}
		return r.Addr
	}
	slices.SortStableFunc(order, func(a, b int) int {
		ba, bb := bucket(ip(a), bits), bucket(ip(b), bits)
		if ba != bb {
			return cmp.Compare(ba, bb)
		}
		return cmp.Compare(bucket(ip(b), 10), bucket(ip(a), 10))
	})
	return order
}

// ftraceHashMaxBits is the kernel's FTRACE_HASH_MAX_BITS.
const ftraceHashMaxBits = 12

// goldenRatio64 is the kernel's GOLDEN_RATIO_64, hash_64's multiplier.
const goldenRatio64 = 0x61C8864680B583EB

// text is the readback line of entry i.
func (p *funcProbe) text(name string, i int) string {
	e := p.entries[i]
	switch p.cmd {
	case "enable_event", "disable_event":
		return fmt.Sprintf("%s:%s:%s:%s%s\n", name, p.cmd, e.system, e.event, p.countText(i))
	}
	return fmt.Sprintf("%s:%s%s\n", name, p.cmd, p.countText(i))
}

// countText is ":unlimited" or ":count=N" with what is left of entry
// i's count.
func (p *funcProbe) countText(i int) string {
	if !p.counted {
		return ":unlimited"
	}
	n := p.entries[i].count
	if p.fp != nil && p.fs != nil {
		if pr, ok := p.fs.b.(FunctionProber); ok {
			if counts := pr.FunctionProbeCounts(p.fp); i < len(counts) {
				n = counts[i]
			}
		}
	}
	return ":count=" + strconv.FormatInt(n, 10)
}

// funcCommand applies "FUNCS:COMMAND[:PARAM]" (whole is COMMAND and
// what follows) to set_ftrace_filter, as the kernel's command callbacks
// parse it. A command with a parameter is the counted kind even when the
// count is empty (it then reads back as -1); dump always counts one,
// cpudump never counts.
func (f *FS) funcCommand(glob, cmd, whole string) error {
	_, param, hasParam := strings.Cut(whole, ":")
	var system, event string
	counted := hasParam
	count := int64(-1)
	number := ""
	switch cmd {
	case "traceon", "traceoff", "stacktrace", "snapshot":
		number, _, _ = strings.Cut(param, ":")
	case "dump":
		counted, number = true, "1"
	case "cpudump":
		counted = false
	case "enable_event", "disable_event":
		if !hasParam {
			return syscall.EINVAL
		}
		var ok bool
		system, param, ok = strings.Cut(param, ":")
		if !ok {
			return syscall.EINVAL
		}
		event, param, counted = strings.Cut(param, ":")
		if _, ok := f.findEventAny(f.b.Events(), system, event); !ok {
			return syscall.EINVAL
		}
		if counted {
			number, _, _ = strings.Cut(param, ":")
			if number == "" && !strings.HasPrefix(glob, "!") {
				return syscall.EINVAL
			}
		}
	default:
		return syscall.EINVAL
	}
	if strings.HasPrefix(glob, "!") {
		return f.removeFuncProbe(glob[1:], cmd, counted)
	}
	if counted && number != "" {
		v, err := strconv.ParseUint(number, 0, 64)
		if err != nil {
			return syscall.EINVAL
		}
		count = int64(v)
	}
	return f.addFuncProbe(glob, cmd, counted, count, system, event)
}

// addFuncProbe registers a command on the functions glob matches: on
// those it is not on yet; none matching, or none new, is EINVAL.
func (f *FS) addFuncProbe(glob, cmd string, counted bool, count int64, system, event string) error {
	set := map[int]bool{}
	if !f.matchFuncs(set, glob, "", false) || len(set) == 0 {
		return syscall.EINVAL
	}
	recs := f.funcRecords()
	f.mu.Lock()
	var p *funcProbe
	for _, q := range f.funcs.probes {
		if q.cmd == cmd && q.counted == counted {
			p = q
			break
		}
	}
	fresh := p == nil
	if fresh {
		p = &funcProbe{cmd: cmd, counted: counted, fs: f}
	}
	have := map[int]bool{}
	for _, e := range p.entries {
		have[e.rec] = true
	}
	added := 0
	for i := range recs {
		if set[i] && !have[i] {
			p.entries = append(p.entries, funcEntry{rec: i, count: count, system: system, event: event})
			added++
		}
	}
	if added == 0 {
		f.mu.Unlock()
		return syscall.EINVAL
	}
	if cmd == "snapshot" {
		// As for the snapshot trigger, registering the command
		// allocates the spare buffer.
		f.allocSnapshot()
	}
	old := f.funcs.probes
	if fresh {
		f.funcs.probes = append([]*funcProbe{p}, f.funcs.probes...)
	}
	f.mu.Unlock()
	if err := f.pushFuncProbes(); err != nil {
		f.mu.Lock()
		f.funcs.probes = old
		p.entries = p.entries[:len(p.entries)-added]
		f.mu.Unlock()
		_ = f.pushFuncProbes()
		return err
	}
	f.syncSoft()
	return nil
}

// removeFuncProbe removes a command of the kind given (counted or not)
// from the functions glob matches: ENODEV when no such command is
// registered, EINVAL when it is on none of them.
func (f *FS) removeFuncProbe(glob, cmd string, counted bool) error {
	set := map[int]bool{}
	all := glob == "" || glob == "*" // every function the command is on
	if !all {
		f.matchFuncs(set, glob, "", false)
	}
	f.mu.Lock()
	var p *funcProbe
	idx := -1
	for i, q := range f.funcs.probes {
		if q.cmd == cmd && q.counted == counted {
			p, idx = q, i
			break
		}
	}
	if p == nil {
		f.mu.Unlock()
		return syscall.ENODEV
	}
	var kept []funcEntry
	for _, e := range p.entries {
		if !all && !set[e.rec] {
			kept = append(kept, e)
		}
	}
	removed := len(kept) < len(p.entries)
	p.entries = kept
	if len(kept) == 0 {
		f.funcs.probes = append(f.funcs.probes[:idx:idx], f.funcs.probes[idx+1:]...)
	}
	f.mu.Unlock()
	if !removed {
		return syscall.EINVAL
	}
	err := f.pushFuncProbes()
	f.syncSoft()
	return err
}

// pushFuncProbes gives the backend the commands as they are now.
func (f *FS) pushFuncProbes() error {
	pr, ok := f.b.(FunctionProber)
	if !ok {
		return nil
	}
	recs := f.funcRecords()
	f.mu.Lock()
	var list []*FunctionProbe
	for _, p := range f.funcs.probes {
		fp := &FunctionProbe{Command: p.cmd, Counted: p.counted}
		for _, e := range p.entries {
			fp.Entries = append(fp.Entries, FunctionProbeEntry{Func: recs[e.rec], Count: e.count, System: e.system, Event: e.event})
		}
		p.fp = fp
		list = append(list, fp)
	}
	f.mu.Unlock()
	return pr.SetFunctionProbes(list)
}
