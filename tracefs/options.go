package tracefs

import (
	"strings"
	"syscall"
)

// traceOption is one trace option: a file of options/ and, for the core
// options and those of the current tracer, a word of trace_options.
type traceOption struct {
	name string
	def  bool
	// core: a core option (trace_options lists it); otherwise an option of
	// a tracer, listed in trace_options only while that tracer is current.
	core bool
	// tracer is the tracer a non-core option belongs to.
	tracer string
	// honoured: ktrace gives the option its meaning, or the option only
	// changes what a tracer ktrace does not have (function, function
	// graph, blk) does, so either value is honoured. A change of another
	// option fails with EINVAL: ktrace would print the same trace either
	// way.
	honoured bool
	// refuse: the tracer refuses every change (the nop tracer's
	// test_nop_refuse, which exists to test that refusal).
	refuse bool
	// since is the first release ("6.12") having the option; "" for both.
	since string
	// topOnly: the top level has the option, instances do not (the
	// kernel's TOP_LEVEL_TRACE_FLAGS, and the blk tracer's options).
	topOnly bool
	// tracing: the option changes what the function tracer records
	// (the backend is told).
	tracing bool
	// tasks: the option makes the event pid lists follow forks (the
	// backend is told: TaskFollower).
	tasks bool
}

// traceOptions are the options of the pinned kernels in trace_options's
// order (the core flags, then the nop tracer's), then the other tracers'
// options, which only options/ shows; defaults as read on 6.1 and 6.12.
var traceOptions = []traceOption{
	{name: "print-parent", def: true, core: true, honoured: true},
	{name: "sym-offset", core: true, honoured: true},
	{name: "sym-addr", core: true, honoured: true},
	{name: "verbose", core: true},
	{name: "raw", core: true},
	{name: "hex", core: true},
	{name: "bin", core: true},
	{name: "block", core: true},
	{name: "fields", core: true, since: "6.12"},
	{name: "trace_printk", def: true, core: true, honoured: true, topOnly: true},
	{name: "annotate", def: true, core: true, honoured: true},
	{name: "userstacktrace", core: true},
	{name: "sym-userobj", core: true},
	{name: "printk-msg-only", core: true, honoured: true, topOnly: true},
	{name: "context-info", def: true, core: true},
	{name: "latency-format", core: true},
	{name: "record-cmd", def: true, core: true, topOnly: true},
	{name: "record-tgid", core: true},
	{name: "overwrite", def: true, core: true},
	{name: "disable_on_free", core: true, honoured: true},
	{name: "irq-info", def: true, core: true},
	{name: "markers", def: true, core: true, honoured: true},
	{name: "event-fork", core: true, honoured: true, tasks: true},
	{name: "trace_printk_dest", def: true, core: true, honoured: true, since: "6.12"},
	{name: "pause-on-trace", core: true, honoured: true},
	{name: "hash-ptr", def: true, core: true, honoured: true},
	{name: "function-trace", def: true, core: true, honoured: true},
	{name: "function-fork", core: true, honoured: true, tracing: true},
	{name: "display-graph", core: true, honoured: true},
	{name: "stacktrace", core: true},
	{name: "test_nop_accept", tracer: "nop", honoured: true},
	{name: "test_nop_refuse", tracer: "nop", refuse: true},
	{name: "blk_cgname", tracer: "blk", honoured: true, topOnly: true},
	{name: "blk_cgroup", tracer: "blk", honoured: true, topOnly: true},
	{name: "blk_classic", tracer: "blk", honoured: true, topOnly: true},
	{name: "func_stack_trace", tracer: "function", honoured: true, tracing: true},
	{name: "func-no-repeats", tracer: "function", honoured: true},
	{name: "funcgraph-abstime", tracer: "function_graph", honoured: true},
	{name: "funcgraph-cpu", def: true, tracer: "function_graph", honoured: true},
	{name: "funcgraph-duration", def: true, tracer: "function_graph", honoured: true},
	{name: "funcgraph-irqs", def: true, tracer: "function_graph", honoured: true},
	{name: "funcgraph-overhead", def: true, tracer: "function_graph", honoured: true},
	{name: "funcgraph-overrun", tracer: "function_graph", honoured: true},
	{name: "funcgraph-proc", tracer: "function_graph", honoured: true},
	{name: "funcgraph-tail", tracer: "function_graph", honoured: true},
	{name: "sleep-time", def: true, tracer: "function_graph", honoured: true},
}

// optionsFor lists the options of a release.
func optionsFor(release string) []traceOption {
	var out []traceOption
	for _, o := range traceOptions {
		if o.since == "6.12" && release != "6.12" {
			continue
		}
		out = append(out, o)
	}
	return out
}

// instanceOptions lists the options of an instance of a release: those
// of the top level less the top-level-only ones, and on 6.1, where an
// instance cannot run function_graph, less that tracer's (seen in both
// kernels' instances).
func instanceOptions(release string) []traceOption {
	var out []traceOption
	for _, o := range optionsFor(release) {
		if o.topOnly || (o.tracer == "function_graph" && release != "6.12") {
			continue
		}
		out = append(out, o)
	}
	return out
}

// instanceDefault is the option's value in a new instance: the top
// level's default, except trace_printk_dest, which only the top level
// starts with set (seen on 6.12).
func (o traceOption) instanceDefault() bool {
	return o.def && o.name != "trace_printk_dest"
}

// option finds an option of the FS's release.
func (f *FS) option(name string) (int, bool) {
	for i, o := range f.opts {
		if o.name == name {
			return i, true
		}
	}
	return 0, false
}

// OptionOn reports whether a trace option (options/NAME) is set; an
// option the release does not have is not.
func (f *FS) OptionOn(name string) bool { return f.optionOn(name) }

// optionOn reports an option's value.
func (f *FS) optionOn(name string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.optionOnLocked(name)
}

// optionOnLocked is optionOn with f.mu held.
func (f *FS) optionOnLocked(name string) bool {
	i, ok := f.option(name)
	return ok && f.optOn[i]
}

// setOption sets option i as the kernel's set_tracer_flag does: setting
// the value an option has is a no-op that succeeds, except for a tracer
// option set through trace_options (always passed to its tracer); the
// nop tracer refuses test_nop_refuse; an option ktrace cannot honour
// refuses a change with EINVAL.
func (f *FS) setOption(i int, on, viaTraceOptions bool) error {
	o := f.opts[i]
	// What the backend recorded before the write is printed with the
	// options it had (ktrace prints a record when it reads it; an
	// option such as hash-ptr changes how).
	f.sync()
	f.mu.Lock()
	defer f.mu.Unlock()
	if o.refuse && (viaTraceOptions || f.optOn[i] != on) {
		return syscall.EINVAL
	}
	if f.optOn[i] == on {
		return nil
	}
	if !o.honoured {
		return syscall.EINVAL
	}
	if o.tasks {
		f.mu.Unlock()
		err := f.followTasks(on)
		f.mu.Lock()
		if err != nil {
			f.note("ktrace: " + o.name + ": " + err.Error())
			return syscall.ENOMEM
		}
	}
	f.optOn[i] = on
	if o.tracing {
		// The function tracer records differently from here on.
		f.mu.Unlock()
		f.updateFunctions()
		f.mu.Lock()
	}
	return nil
}

// traceOptionsText is trace_options: the core options and the current
// tracer's, each as its name or "no" and its name.
func (f *FS) traceOptionsText() string {
	var b strings.Builder
	f.mu.Lock()
	defer f.mu.Unlock()
	cur := f.tracerLocked()
	for i, o := range f.opts {
		if !o.core && o.tracer != cur {
			continue
		}
		if !f.optOn[i] {
			b.WriteString("no")
		}
		b.WriteString(o.name + "\n")
	}
	return b.String()
}

// writeTraceOptions is a write to trace_options: the first word, stripped,
// names an option ("noNAME" clears it); a core option or one of the
// current tracer's, else EINVAL.
func (f *FS) writeTraceOptions(p []byte) (int, error) {
	if len(p) >= 64 {
		// The kernel copies the write into a 64-byte buffer.
		return 0, syscall.EINVAL
	}
	s := strings.TrimSpace(string(p))
	on := true
	if rest, ok := strings.CutPrefix(s, "no"); ok {
		on = false
		s = rest
	}
	i, ok := f.option(s)
	if !ok || (!f.opts[i].core && f.opts[i].tracer != f.tracerName()) {
		return 0, syscall.EINVAL
	}
	if err := f.setOption(i, on, !f.opts[i].core); err != nil {
		return 0, err
	}
	return len(p), nil
}

// writeOptionFile is a write to options/NAME: 0 or 1 (kstrtoul).
func (f *FS) writeOptionFile(name string, p []byte) (int, error) {
	v, err := parseUlong(p)
	if err != nil {
		return 0, err
	}
	if v != 0 && v != 1 {
		return 0, syscall.EINVAL
	}
	i, ok := f.option(name)
	if !ok {
		return 0, syscall.ENOENT
	}
	if err := f.setOption(i, v == 1, false); err != nil {
		return 0, err
	}
	return len(p), nil
}
