package tracefs

import (
	"fmt"
	"strconv"
	"strings"
)

// The function_graph tracer's output. Its records (a function's entry,
// a function's return with the entry's time) are kept as records and
// printed when the trace is read, as the kernel's graph tracer prints
// them (kernel/trace/trace_functions_graph.c): the funcgraph-* options
// and context-info apply to what was recorded before they changed, an
// entry directly followed on its CPU by its own return prints as one
// leaf line "func();", and a line of dashes marks each change of task on
// a CPU.

// GraphRecord is one record of the function_graph tracer.
type GraphRecord struct {
	// Return: a return; otherwise an entry.
	Return bool
	CPU    int
	Pid    int
	Comm   string
	// Func is the function, as %ps prints it.
	Func string
	// Depth is the function's depth in the task's traced calls (0 for
	// the outermost).
	Depth int
	// TS is the record's time: the entry's time, or the return's.
	TS uint64
	// CallTime is the entry's time of a return (RetTime is TS).
	CallTime uint64
	// Overrun is the return's overrun count (funcgraph-overrun).
	Overrun uint64
	// IRQ: the function is an interrupt entry (in __irqentry_text), whose
	// entry and return the trace marks with arrows.
	IRQ bool
}

// RecordGraph adds a function_graph record to the trace (false when it
// is not recorded: tracing off, or its CPU outside tracing_cpumask). The
// task's command is saved for the lines that name it.
func (f *FS) RecordGraph(r GraphRecord) bool {
	rec := r
	e := traceEntry{ts: r.TS, pid: r.Pid, graph: &rec}
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.tracingOn || f.pausers > 0 {
		return false
	}
	if r.CPU < f.cpus && !f.cpuMaskLocked().has(r.CPU) {
		return false
	}
	if f.comms == nil {
		f.comms = map[int]string{}
	}
	f.comms[r.Pid] = r.Comm
	f.ring.add(e)
	f.cond.Broadcast()
	return true
}

// graphFlags are the graph tracer's print options.
type graphFlags struct {
	cpu, overhead, duration, proc, abstime, tail, irqs, overrun bool
	// context: the context-info option (no columns without it).
	context bool
}

// graphFlagsLocked reads the options (f.mu held).
func (f *FS) graphFlagsLocked() graphFlags {
	on := func(name string, def bool) bool {
		if i, ok := f.option(name); ok {
			return f.optOn[i]
		}
		return def
	}
	return graphFlags{
		cpu:      on("funcgraph-cpu", true),
		overhead: on("funcgraph-overhead", true),
		duration: on("funcgraph-duration", true),
		proc:     on("funcgraph-proc", false),
		abstime:  on("funcgraph-abstime", false),
		tail:     on("funcgraph-tail", false),
		irqs:     on("funcgraph-irqs", true),
		overrun:  on("funcgraph-overrun", false),
		context:  on("context-info", true),
	}
}

// graphHeader is the trace file's head under the graph tracer.
func graphHeader(fl graphFlags) string {
	if !fl.context {
		return ""
	}
	// Each shown column adds its title to the first line and its
	// marks to the second.
	cols := []struct {
		on           bool
		title, marks string
	}{
		{fl.abstime, "     TIME       ", "      |         "},
		{fl.cpu, " CPU", " |  "},
		{fl.proc, "  TASK/PID       ", "   |    |        "},
		{fl.duration, "  DURATION   ", "   |   |      "},
	}
	title, marks := "#", "#"
	for _, c := range cols {
		if c.on {
			title += c.title
			marks += c.marks
		}
	}
	return title + "               FUNCTION CALLS\n" + marks + "               |   |   |   |\n"
}

// graphCPU is the printer's state of one CPU (the kernel's
// fgraph_cpu_data).
type graphCPU struct {
	lastPid  int
	depthIRQ int
	enter    map[int]string
	// depth is where a comment line goes (the kernel's cpu_data->depth).
	depth int
}

// graphPrinter prints graph records in trace order, keeping the state
// the kernel keeps for one reader of the trace.
type graphPrinter struct {
	fl       graphFlags
	cpuWidth int
	comms    map[int]string
	cpus     map[int]*graphCPU
}

func newGraphPrinter(fl graphFlags, ncpus int, comms map[int]string) *graphPrinter {
	return &graphPrinter{fl: fl, cpuWidth: len(strconv.Itoa(max(ncpus-1, 0))), comms: comms, cpus: map[int]*graphCPU{}}
}

func (g *graphPrinter) cpu(c int) *graphCPU {
	s := g.cpus[c]
	if s == nil {
		s = &graphCPU{lastPid: -1, depthIRQ: -1, enter: map[int]string{}}
		g.cpus[c] = s
	}
	return s
}

// graphMarks are trace_find_mark's marks: the first whose threshold (ns)
// the duration exceeds.
var graphMarks = []struct {
	ns   uint64
	mark byte
}{{1000000000, '$'}, {100000000, '@'}, {10000000, '*'}, {1000000, '#'}, {100000, '!'}, {10000, '+'}}

func graphMark(d uint64) byte {
	for _, m := range graphMarks {
		if d > m.ns {
			return m.mark
		}
	}
	return ' '
}

// graphDuration is trace_print_graph_duration: microseconds, with three
// decimals while the whole stays under 8 digits, and " us " padded to
// the column.
func graphDuration(b *strings.Builder, d uint64) {
	us := strconv.FormatUint(d/1000, 10)
	b.WriteString(us)
	n := len(us)
	if n < 7 {
		ns := fmt.Sprintf("%03d", d%1000)
		if keep := min(4, 7-n); len(ns) > keep {
			ns = ns[:keep]
		}
		b.WriteString("." + ns)
		n += len(ns) + 1
	}
	b.WriteString(" us ")
	for ; n < 8; n++ {
		b.WriteByte(' ')
	}
}

// Fill kinds of the duration column.
const (
	graphFillNone = iota
	graphFillFull
	graphFillStart
	graphFillEnd
)

func (g *graphPrinter) duration(b *strings.Builder, d uint64, fill int) {
	if !g.fl.duration || !g.fl.context {
		return
	}
	switch fill {
	case graphFillFull:
		b.WriteString("              |  ")
		return
	case graphFillStart:
		b.WriteString("  ")
		return
	case graphFillEnd:
		b.WriteString(" |")
		return
	}
	if g.fl.overhead {
		b.WriteByte(graphMark(d))
		b.WriteByte(' ')
	} else {
		b.WriteString("  ")
	}
	graphDuration(b, d)
	b.WriteString("|  ")
}

func (g *graphPrinter) proc(b *strings.Builder, pid int) {
	comm := g.comms[pid]
	switch {
	case pid == 0:
		comm = "<idle>"
	case comm == "":
		comm = "<...>"
	}
	if len(comm) > 7 {
		comm = comm[:7]
	}
	s := comm + "-" + strconv.Itoa(pid)
	spaces := max(14-len(s), 0)
	b.WriteString(strings.Repeat(" ", spaces/2) + s + strings.Repeat(" ", spaces-spaces/2))
}

func (g *graphPrinter) cpuCol(b *strings.Builder, cpu int) {
	fmt.Fprintf(b, " %*d) ", g.cpuWidth, cpu)
}

// columns are the context columns a line starts with.
func (g *graphPrinter) columns(b *strings.Builder, r *GraphRecord) {
	if !g.fl.context {
		return
	}
	if g.fl.abstime {
		fmt.Fprintf(b, "%5d.%06d |  ", r.TS/1e9, r.TS%1e9/1e3)
	}
	if g.fl.cpu {
		g.cpuCol(b, r.CPU)
	}
	if g.fl.proc {
		g.proc(b, r.Pid)
		b.WriteString(" | ")
	}
}

// prologue is print_graph_prologue: the task-change banner, the arrow of
// an interrupt entry, and the context columns.
func (g *graphPrinter) prologue(b *strings.Builder, r *GraphRecord, entry bool) {
	c := g.cpu(r.CPU)
	if c.lastPid != r.Pid {
		prev := c.lastPid
		c.lastPid = r.Pid
		if prev != -1 {
			b.WriteString(" ------------------------------------------\n")
			g.cpuCol(b, r.CPU)
			g.proc(b, prev)
			b.WriteString(" => ")
			g.proc(b, r.Pid)
			b.WriteString("\n ------------------------------------------\n\n")
		}
	}
	if entry {
		g.irqArrow(b, r, "==========>")
	}
	g.columns(b, r)
}

// irqArrow is print_graph_irq: a line marking an interrupt entry's entry
// or return.
func (g *graphPrinter) irqArrow(b *strings.Builder, r *GraphRecord, arrow string) {
	if !r.IRQ {
		return
	}
	g.columns(b, r)
	g.duration(b, 0, graphFillStart)
	b.WriteString(arrow)
	g.duration(b, 0, graphFillEnd)
	b.WriteByte('\n')
}

// inIRQ is check_irq_entry and check_irq_return: with funcgraph-irqs
// off, what an interrupt entry calls is not printed.
func (g *graphPrinter) inIRQ(r *GraphRecord) bool {
	if g.fl.irqs {
		return false
	}
	c := g.cpu(r.CPU)
	if !r.Return {
		if c.depthIRQ >= 0 {
			return true
		}
		if !r.IRQ {
			return false
		}
		c.depthIRQ = r.Depth
		return true
	}
	if c.depthIRQ == -1 {
		return false
	}
	if c.depthIRQ >= r.Depth {
		c.depthIRQ = -1
	}
	return true
}

// entry prints an entry; leaf is its return when that is the next record
// of its CPU (the kernel's get_return_for_leaf), nil otherwise.
func (g *graphPrinter) entry(b *strings.Builder, r, leaf *GraphRecord) {
	if g.inIRQ(r) {
		return
	}
	g.prologue(b, r, true)
	c := g.cpu(r.CPU)
	indent := strings.Repeat(" ", 2*max(r.Depth, 0))
	if leaf != nil {
		c.depth = r.Depth - 1
		delete(c.enter, r.Depth)
		g.duration(b, leaf.TS-leaf.CallTime, graphFillNone)
		b.WriteString(indent + r.Func + "();\n")
		g.irqArrow(b, leaf, "<==========")
		return
	}
	c.depth = r.Depth
	c.enter[r.Depth] = r.Func
	g.duration(b, 0, graphFillFull)
	b.WriteString(indent + r.Func + "() {\n")
}

// ret prints a return.
func (g *graphPrinter) ret(b *strings.Builder, r *GraphRecord) {
	if g.inIRQ(r) {
		return
	}
	c := g.cpu(r.CPU)
	c.depth = r.Depth - 1
	match := c.enter[r.Depth] == r.Func
	delete(c.enter, r.Depth)
	g.prologue(b, r, false)
	g.duration(b, r.TS-r.CallTime, graphFillNone)
	b.WriteString(strings.Repeat(" ", 2*max(r.Depth, 0)))
	if match && !g.fl.tail {
		b.WriteString("}\n")
	} else {
		b.WriteString("} /* " + r.Func + " */\n")
	}
	if g.fl.overrun {
		fmt.Fprintf(b, " (Overruns: %d)\n", r.Overrun)
	}
	g.irqArrow(b, r, "<==========")
}

// comment is print_graph_comment: another event's line under the graph
// tracer, its text after the context columns between "/* " and " */",
// indented one level below the CPU's current call.
func (g *graphPrinter) comment(b *strings.Builder, e *traceEntry) {
	body := e.text
	if i := strings.Index(body, ": "); i >= 0 && e.task {
		body = body[i+2:]
	} else if i := strings.Index(body, "] "); i >= 0 {
		// A line with its TASK-PID column: the body follows the
		// flags and the timestamp.
		if j := strings.Index(body[i:], ": "); j >= 0 {
			body = body[i+j+2:]
		}
	}
	body = strings.TrimSuffix(body, "\n")
	r := &GraphRecord{CPU: e.cpu(), Pid: e.pid, TS: e.ts}
	g.prologue(b, r, false)
	g.duration(b, 0, graphFillFull)
	if d := g.cpu(r.CPU).depth; d > 0 {
		b.WriteString(strings.Repeat(" ", 2*(d+1)))
	}
	b.WriteString("/* " + body + " */\n")
}

// writeEntries writes entries as the trace shows them, graph records
// through g (nil: none is expected).
func writeEntries(b *strings.Builder, entries []traceEntry, comms map[int]string, g *graphPrinter) {
	// next[i]: the index of the next entry of entry i's CPU, for the
	// leaf test (-1: none).
	var next []int
	if g != nil {
		next = make([]int, len(entries))
		last := map[int]int{}
		for i := len(entries) - 1; i >= 0; i-- {
			cpu := entries[i].cpu()
			next[i] = -1
			if j, ok := last[cpu]; ok {
				next[i] = j
			}
			last[cpu] = i
		}
	}
	skip := map[int]bool{}
	for i := range entries {
		e := &entries[i]
		if skip[i] {
			continue
		}
		if g == nil {
			e.writeTo(b, comms)
			continue
		}
		if e.graph == nil {
			if e.cpu() < 0 {
				e.writeTo(b, comms)
			} else {
				g.comment(b, e)
			}
			continue
		}
		if e.graph.Return {
			g.ret(b, e.graph)
			continue
		}
		var leaf *GraphRecord
		if j := next[i]; j >= 0 {
			if n := entries[j].graph; n != nil && n.Return && n.Pid == e.graph.Pid && n.Func == e.graph.Func {
				leaf = n
				skip[j] = true
			}
		}
		g.entry(b, e.graph, leaf)
	}
}

// cpu is the CPU an entry was recorded on (-1: unknown).
func (e *traceEntry) cpu() int {
	if e.graph != nil {
		return e.graph.CPU
	}
	return entryCPU(e.text)
}
