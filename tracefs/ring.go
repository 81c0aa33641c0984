package tracefs

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"syscall"
)

// traceEntry is one recorded event: its time (for ordering the entries of
// several sources) and its trace line, newline included. An entry recorded
// by RecordTask holds the line without its TASK-PID column (task is set),
// which is rendered when the entry is read.
type traceEntry struct {
	ts   uint64
	text string
	pid  int
	task bool
	// marker: a trace_marker entry, which event pid filters do not drop.
	marker bool
	// graph is a function_graph record, printed when the trace is read
	// (text is empty).
	graph *GraphRecord
}

// size is what the entry takes of the ring's limit: its text, or for a
// function_graph record (printed when read) the length of its line as
// the graph tracer prints it at its depth, so that a full ring drops
// graph records as it drops others rather than keeping every one.
func (e traceEntry) size() int {
	if e.graph != nil {
		return graphLineBytes + 2*e.graph.Depth + len(e.graph.Func)
	}
	return len(e.text)
}

// graphLineBytes is a function_graph line's length but for its indent and
// function name: the CPU, duration and "|" columns and the call's
// punctuation.
const graphLineBytes = 32

// traceRing is the emulated ring buffer behind trace and trace_pipe. It is
// guarded by FS.mu.
type traceRing struct {
	entries []traceEntry // oldest first, ordered by ts
	bytes   int
	// limit bounds the text the ring keeps (FS.ringLimit, from
	// buffer_size_kb). Like the kernel's ring buffer in its default
	// overwrite mode, a full ring drops its oldest entries, which still
	// count as written.
	limit int
	// overrun counts the entries a full ring dropped since the last clear.
	// The kernel's entries-written is the entries in the buffer plus
	// these: entries consumed through trace_pipe count in neither (seen on
	// 6.1 and 6.12).
	overrun uint64
}

// add inserts an entry in time order (records from several sources arrive
// nearly ordered, so the search starts at the newest end).
func (r *traceRing) add(e traceEntry) {
	ts := e.ts
	i := len(r.entries)
	for i > 0 && r.entries[i-1].ts > ts {
		i--
	}
	r.entries = append(r.entries, traceEntry{})
	copy(r.entries[i+1:], r.entries[i:])
	r.entries[i] = e
	r.bytes += e.size()
	drop := 0
	for r.bytes > r.limit && drop < len(r.entries)-1 {
		r.bytes -= r.entries[drop].size()
		drop++
	}
	if drop > 0 {
		r.overrun += uint64(drop)
		r.entries = append(r.entries[:0], r.entries[drop:]...)
	}
}

func (r *traceRing) clear() { *r = traceRing{limit: r.limit} }

// take removes and returns the entries' text, oldest first; g prints the
// graph records (nil: there are none).
func (r *traceRing) take(comms map[int]string, g *graphPrinter) string {
	var b strings.Builder
	writeEntries(&b, r.entries, comms, g)
	r.entries = r.entries[:0]
	r.bytes = 0
	return b.String()
}

// writeTo writes the entry's line, its TASK-PID column named by the
// pid's latest command (comms).
func (e *traceEntry) writeTo(b *strings.Builder, comms map[int]string) {
	if e.task {
		var col [32]byte
		b.Write(AppendTask(col[:0], comms[e.pid], e.pid))
	}
	b.WriteString(e.text)
}

// AppendTask appends the "TASK-PID" column of a trace line as the kernel
// prints it: the command right-aligned in 16 columns ("<idle>" for pid 0,
// "<...>" when unknown), the pid left-aligned in 7.
func AppendTask(b []byte, comm string, pid int) []byte {
	switch {
	case pid == 0:
		comm = "<idle>"
	case comm == "":
		comm = "<...>"
	}
	for i := len(comm); i < 16; i++ {
		b = append(b, ' ')
	}
	b = append(b, comm...)
	b = append(b, '-')
	n := len(b)
	b = strconv.AppendInt(b, int64(pid), 10)
	for i := len(b) - n; i < 7; i++ {
		b = append(b, ' ')
	}
	return b
}

// RecordTask is Record for a line given without its TASK-PID column
// (rest starts with " [CPU]"). As the kernel's saved_cmdlines does, the
// column is filled in when the trace is read, with the command of the
// pid's latest recorded event: what a process did before an exec shows
// under the command it exec'd, as on Linux.
func (f *FS) RecordTask(ts uint64, pid int, comm string, rest []byte) bool {
	return f.record(traceEntry{ts: ts, text: withNewline(rest), pid: pid, task: true}, comm)
}

// Record appends one event to the trace ring: ts orders entries from
// several sources, line is the trace line (a final newline is added when
// missing). While tracing_on is 0 nothing is recorded, as in the kernel; the
// result says whether the entry was kept. Waiting trace_pipe readers wake.
func (f *FS) Record(ts uint64, line []byte) bool {
	return f.record(traceEntry{ts: ts, text: withNewline(line)}, "")
}

func withNewline(b []byte) string {
	s := string(b)
	if !strings.HasSuffix(s, "\n") {
		s += "\n"
	}
	return s
}

// TracingBackend is a backend whose programs honour tracing_on
// themselves (a traceon or traceoff trigger switches it where the event
// happens): the tracing_on file reads and writes the backend's switch,
// and the records it passes on were written while it was on.
type TracingBackend interface {
	SetTracingOn(on bool) error
	TracingOn() bool
}

// tracingOnNow is tracing_on: the backend's switch where it keeps one.
func (f *FS) tracingOnNow() bool {
	if tb, ok := f.b.(TracingBackend); ok {
		return tb.TracingOn()
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.tracingOn
}

// record adds e unless tracing is off or paused by a reader of trace
// (options/pause-on-trace); a task entry also saves its pid's command.
// A TracingBackend's records were written while tracing was on.
func (f *FS) record(e traceEntry, comm string) bool {
	_, backendOn := f.b.(TracingBackend)
	f.mu.Lock()
	defer f.mu.Unlock()
	if (!f.tracingOn && (!backendOn || e.marker)) || f.pausers > 0 {
		return false
	}
	if e.task && !e.marker && !f.pidTraced(e.pid) {
		return false
	}
	if cpu := entryCPU(e.text); cpu >= 0 && cpu < f.cpus && !f.cpuMaskLocked().has(cpu) {
		// tracing_cpumask: the CPU's buffer does not record. (An
		// emulated entry may name a CPU of this machine that the
		// kernel model lacks; no mask bit covers it.)
		return false
	}
	if e.task {
		if f.comms == nil {
			f.comms = map[int]string{}
		}
		f.comms[e.pid] = comm
	}
	f.restamp(&e)
	f.ring.add(e)
	f.cond.Broadcast()
	return true
}

// wake tells waiting trace_pipe readers that the enabled events changed.
func (f *FS) wake() {
	f.mu.Lock()
	f.gen++
	f.cond.Broadcast()
	f.mu.Unlock()
}

// clearTrace empties the ring, as a truncating open of trace does. The
// backend passes on what it holds first, so that no earlier hit shows up
// after the clear.
func (f *FS) clearTrace() {
	f.sync()
	f.mu.Lock()
	f.ring.clear()
	f.mu.Unlock()
}

// traceText is the trace file: the nop tracer's header with the ring's
// counts, then every entry (reading trace does not consume).
func (f *FS) traceText() string {
	f.sync()
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.ringText(&f.ring)
}

// ringText is a buffer as the trace file shows it: the nop tracer's
// header with the buffer's counts, then its entries. Called with f.mu
// held.
func (f *FS) ringText(r *traceRing) string {
	var b strings.Builder
	n := len(r.entries)
	if f.tracerLocked() == tracerGraph {
		// The graph tracer's own header, and a printer of its own for
		// each read, as the kernel's graph_trace_open gives one.
		fl := f.graphFlagsLocked()
		b.WriteString("# tracer: " + tracerGraph + "\n#\n")
		b.WriteString(graphHeader(fl))
		writeEntries(&b, r.entries, f.comms, newGraphPrinter(fl, f.cpus, f.comms))
		return b.String()
	}
	fmt.Fprintf(&b, traceHeaderFmt, f.tracerLocked(), n, uint64(n)+r.overrun, f.cpus)
	writeEntries(&b, r.entries, f.comms, nil)
	return b.String()
}

// pipeGraphLocked is the printer of trace_pipe's graph records, which
// keeps its state from one read to the next (f.mu held).
func (f *FS) pipeGraphLocked() *graphPrinter {
	if f.tracerLocked() != tracerGraph {
		return nil
	}
	if f.pipeGraph == nil {
		f.pipeGraph = newGraphPrinter(f.graphFlagsLocked(), f.cpus, f.comms)
	}
	f.pipeGraph.fl = f.graphFlagsLocked()
	f.pipeGraph.comms = f.comms
	return f.pipeGraph
}

// sync lets a Syncer backend pass on what it holds. It must be called
// without f.mu.
func (f *FS) sync() {
	if s, ok := f.b.(Syncer); ok {
		s.Sync()
	}
	f.takeSnapshots()
}

// anyEnabled reports whether some event is enabled. It must be called
// without f.mu: the backend may be recording.
func (f *FS) anyEnabled() bool {
	for _, e := range f.b.Events() {
		if e.Enabled {
			return true
		}
	}
	// Static events count once they are loaded: before, none can be
	// enabled, and loading them (a read of every format file on the host
	// model) has no place in a trace_pipe read.
	s := f.static.Load()
	if s == nil {
		return false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, on := range s.on {
		if on {
			return true
		}
	}
	return false
}

// Shutdown ends every waiting trace_pipe read (each returns end of file)
// and keeps later ones from waiting, for a front end that is going away: a
// mount being unmounted must not leave a reader blocked in it.
func (f *FS) Shutdown() {
	f.eachInstance((*FS).Shutdown)
	f.mu.Lock()
	f.shutdown = true
	f.gen++
	f.cond.Broadcast()
	f.mu.Unlock()
}

// pipeRead is one consuming read of trace_pipe. With a recording backend
// (Options.PipeBlocks) it waits, as the kernel does, until entries arrive.
// It ends with "" (end of file) when no event is enabled (nothing could
// arrive), when closed reports the handle closed or after Shutdown; with
// EAGAIN instead of waiting when nonblock is set (O_NONBLOCK), and with
// EINTR when ctx is done first (the reader was interrupted by a signal).
// Without a recording backend it returns what the ring holds.
func (f *FS) pipeRead(ctx context.Context, nonblock bool, closed func() bool) (string, error) {
	stop := context.AfterFunc(ctx, func() {
		f.mu.Lock()
		f.cond.Broadcast()
		f.mu.Unlock()
	})
	defer stop()
	for {
		f.sync()
		f.mu.Lock()
		if len(f.ring.entries) > 0 {
			s := f.ring.take(f.comms, f.pipeGraphLocked())
			f.mu.Unlock()
			return s, nil
		}
		gen, shut := f.gen, f.shutdown
		f.mu.Unlock()
		if !f.pipeBlocks || shut || closed() || !f.anyEnabled() {
			return "", nil
		}
		if nonblock {
			return "", syscall.EAGAIN
		}
		f.mu.Lock()
		// An enable change or a cancellation between the checks and here
		// bumped gen or ended ctx: check again instead of waiting for a
		// wake-up that already happened.
		if ctx.Err() != nil {
			f.mu.Unlock()
			return "", syscall.EINTR
		}
		if f.gen == gen && len(f.ring.entries) == 0 {
			f.cond.Wait()
		}
		f.mu.Unlock()
	}
}
