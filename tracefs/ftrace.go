package tracefs

import (
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// The generic ftrace files scripts written for the kernel's tracefs touch
// (the ftrace selftests' harness resets them before every case): the
// tracer, the event list, event pid filters, the buffer size, the clock,
// the marker and the trace options. Each has the kernel's readback and
// errors; where ktrace cannot do what the kernel would, the write fails
// as the kernel fails it for something it does not have (an unknown
// tracer, clock or option change: EINVAL).

// traceClocks are the kernel's trace clocks in trace_clock's order.
var traceClocks = []string{"local", "global", "counter", "uptime", "perf", "mono", "mono_raw", "boot", "tai", "x86-tsc"}

// Ring buffer sizes: the kernel's pages hold BUF_PAGE_SIZE bytes of
// events (a 4 KiB page less its 16-byte header); before anything is
// traced each CPU's buffer has its minimum of two pages, and it grows to
// trace_buf_size (1,441,792 bytes) when first used.
const (
	bufPageSize     = 4096 - 16
	bufMinPages     = 2
	traceBufSize    = 1441792
	bufMaxTotalSize = 256 << 20 // ktrace refuses more (ENOMEM), as an allocation that fails
	// ringTextFactor: ktrace keeps trace lines as text, about four times
	// the size of the kernel's binary record of the same event.
	ringTextFactor = 4
)

// pidMaxLimit is PID_MAX_LIMIT on 64-bit: set_event_pid refuses larger
// pids.
const pidMaxLimit = 4 << 20

// bufPages is the page count the kernel's ring_buffer_resize gives a
// per-CPU size in bytes.
func bufPages(size uint64) uint64 {
	n := (size + bufPageSize - 1) / bufPageSize
	if n < bufMinPages {
		n = bufMinPages
	}
	return n
}

// bufferSizeText is buffer_size_kb (total false) or buffer_total_size_kb.
func (f *FS) bufferSizeText(total bool) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	per := f.bufPages * bufPageSize >> 10
	mul := uint64(1)
	if total {
		mul = uint64(f.cpus)
	}
	if !f.expanded {
		return fmt.Sprintf("%d (expanded: %d)\n", per*mul, uint64(traceBufSize>>10)*mul)
	}
	return fmt.Sprintf("%d\n", per*mul)
}

// writeBufferSize is a write to buffer_size_kb: the per-CPU size in KiB
// (kstrtoul, not 0), rounded up to whole pages. The ring keeps as much
// trace text as the kernel's buffers would hold records.
func (f *FS) writeBufferSize(p []byte) (int, error) {
	v, err := parseUlong(p)
	if err != nil {
		return 0, err
	}
	if v == 0 {
		return 0, syscall.EINVAL
	}
	if v > bufMaxTotalSize>>10 || v<<10*uint64(f.cpus) > bufMaxTotalSize {
		return 0, syscall.ENOMEM
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.bufPages = bufPages(v << 10)
	f.expanded = true
	f.ring.limit = f.ringLimit()
	if f.snap != nil {
		f.snap.limit = f.ring.limit
	}
	return len(p), nil
}

// ringLimit is the ring's text budget for the current size (f.mu held).
func (f *FS) ringLimit() int {
	pages := f.bufPages
	if !f.expanded {
		pages = bufPages(traceBufSize)
	}
	return int(pages*bufPageSize) * f.cpus * ringTextFactor
}

// expand grows the buffer to its default size, as the kernel does when
// an event is first enabled.
func (f *FS) expand() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.expanded {
		f.expanded = true
		f.bufPages = bufPages(traceBufSize)
		f.ring.limit = f.ringLimit()
		if f.snap != nil {
			f.snap.limit = f.ring.limit
		}
	}
}

// traceClockText lists the clocks, the current one in brackets.
func (f *FS) traceClockText() string {
	f.mu.Lock()
	cur := f.clockName
	f.mu.Unlock()
	parts := make([]string, len(traceClocks))
	for i, c := range traceClocks {
		if c == cur {
			c = "[" + c + "]"
		}
		parts[i] = c
	}
	return strings.Join(parts, " ") + "\n"
}

// writeTraceClock selects a clock by name (blanks stripped): an unknown
// one is EINVAL, as is one ktrace cannot stamp records with.
func (f *FS) writeTraceClock(p []byte) (int, error) {
	if len(p) >= 64 {
		return 0, syscall.EINVAL
	}
	name := strings.TrimSpace(string(p))
	known := false
	for _, c := range traceClocks {
		known = known || c == name
	}
	if !known {
		return 0, syscall.EINVAL
	}
	c, err := newTraceClock(name)
	if err != nil {
		f.note("ktrace: trace_clock: " + err.Error())
		return 0, syscall.EINVAL
	}
	// The entries of the old clock go, as the kernel's reset of the
	// buffer on a change drops them.
	f.clearTrace()
	f.mu.Lock()
	f.clockName = name
	f.clockConv = c
	f.mu.Unlock()
	return len(p), nil
}

// availableEventsText is available_events: every event as SYSTEM:EVENT in
// the kernel's list order.
func (f *FS) availableEventsText() string {
	var b strings.Builder
	for _, e := range f.kernelOrder() {
		b.WriteString(e.Group + ":" + e.Name + "\n")
	}
	return b.String()
}

// setEventText is set_event: the enabled events, as available_events
// lists them.
func (f *FS) setEventText() string {
	var b strings.Builder
	for _, e := range f.kernelOrder() {
		if e.Enabled {
			b.WriteString(e.Group + ":" + e.Name + "\n")
		}
	}
	return b.String()
}

// writeSetEvent is a write to set_event: blank-separated words, each
// SYSTEM:EVENT, SYSTEM: or :EVENT ("" or "*" for any), or a bare word
// naming an event or a system; a leading '!' disables. A word that
// matches nothing fails the write with EINVAL (words before it took
// effect, as in the kernel, which takes one word per write(2)).
func (f *FS) writeSetEvent(p []byte) (int, error) {
	for _, w := range strings.Fields(string(p)) {
		on := true
		if w[0] == '!' {
			on = false
			w = w[1:]
		}
		var match, sys, ev string
		if s, e, ok := strings.Cut(w, ":"); ok {
			sys, ev = s, e
			if sys == "*" {
				sys = ""
			}
			if ev == "*" {
				ev = ""
			}
		} else {
			match = w
		}
		found := false
		var first error
		for _, e := range f.events() {
			if match != "" && match != e.Name && match != e.Group {
				continue
			}
			if sys != "" && sys != e.Group {
				continue
			}
			if ev != "" && ev != e.Name {
				continue
			}
			found = true
			if e.Enabled == on {
				continue
			}
			if err := f.setOne(e, on); err != nil && first == nil {
				first = err
			}
		}
		f.wake()
		if !found {
			return 0, syscall.EINVAL
		}
		if first != nil {
			return 0, first
		}
	}
	return len(p), nil
}

// clearEvents disables every event (a truncating open of set_event).
func (f *FS) clearEvents() {
	for _, e := range f.events() {
		if e.Enabled {
			_ = f.setOne(e, false)
		}
	}
	f.wake()
}

// pidListText is set_event_pid or set_event_notrace_pid: the pids in
// ascending order.
func pidListText(set map[int]bool) string {
	pids := make([]int, 0, len(set))
	for p := range set {
		pids = append(pids, p)
	}
	sort.Ints(pids)
	var b strings.Builder
	for _, p := range pids {
		b.WriteString(strconv.Itoa(p) + "\n")
	}
	return b.String()
}

// writePidList adds the blank-separated pids of a write (kstrtoul base 0,
// below PID_MAX_LIMIT) to a pid list; any bad word fails the write with
// EINVAL and changes nothing.
func (f *FS) writePidList(notrace bool, p []byte) (int, error) {
	add, err := parsePids(p)
	if err != nil {
		return 0, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	set := f.eventPids
	if notrace {
		set = f.eventNoPids
	}
	for _, v := range add {
		set[v] = true
	}
	return len(p), nil
}

// parsePids reads the blank-separated pids of a write to a pid list
// (kstrtoul base 0, below PID_MAX_LIMIT); any bad word is EINVAL.
func parsePids(p []byte) ([]int, error) {
	var add []int
	for _, w := range strings.Fields(string(p)) {
		v, err := strconv.ParseUint(w, 0, 64)
		if err != nil || v >= pidMaxLimit {
			return nil, syscall.EINVAL
		}
		add = append(add, int(v))
	}
	return add, nil
}

// pidTraced reports whether events of pid are recorded under
// set_event_pid and set_event_notrace_pid (f.mu held).
func (f *FS) pidTraced(pid int) bool {
	if len(f.eventPids) > 0 && !f.eventPids[pid] {
		return false
	}
	return !f.eventNoPids[pid]
}

// writeMarker is a write to trace_marker: the text becomes a
// "tracing_mark_write: TEXT" entry of the writing task. With tracing off
// or paused by a reader of trace (options/pause-on-trace) the write fails
// with EBADF, with the markers option off with EINVAL.
func (f *FS) writeMarker(pid int, p []byte) (int, error) {
	if !f.optionOn("markers") {
		return 0, syscall.EINVAL
	}
	text := p
	if n := f.markerMax(); len(text) > n {
		// The rest is the writer's to write again: a shell's
		// full_write makes it the next entries.
		text = text[:n]
	}
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return 0, fmt.Errorf("trace_marker: clock: %w", err)
	}
	ns := uint64(ts.Nano())
	comm, cpu := taskInfo(pid)
	line := fmt.Sprintf(" [%03d] ..... %5d.%06d: tracing_mark_write: %s", cpu, ns/1e9, ns%1e9/1e3, text)
	f.sync()
	on := f.tracingOnNow()
	f.mu.Lock()
	on = on && f.pausers == 0
	if on {
		// A trigger may have turned tracing on where the event happened.
		f.tracingOn = true
	}
	f.mu.Unlock()
	if !on {
		return 0, syscall.EBADF
	}
	if err := f.markerTriggers(pid, comm, cpu, ns, text); err != nil {
		return 0, err
	}
	f.record(traceEntry{ts: ns, text: withNewline([]byte(line)), pid: pid, task: true, marker: true}, comm)
	return len(text), nil
}

// markerMax is how much of one write(2) to trace_marker the kernel
// records in one entry, and so takes: 6.1 copies at most TRACE_BUF_SIZE
// (1,024) bytes; 6.12 takes up to TRACE_MARKER_MAX_SIZE (4,096) but no
// more than the largest event a sub-buffer holds (4,072 bytes of a 4 KiB
// page) less the print entry's header and the '\n' and NUL it adds
// (measured: 4,054 bytes per entry, the rest in the next write's).
func (f *FS) markerMax() int {
	if f.texts.name != "6.12" {
		return 1024
	}
	const (
		maxEventData = bufPageSize - 8 // BUF_MAX_DATA_SIZE
		printMeta    = 16 + 2          // struct print_entry, '\n', '\0'
	)
	return min(4096, maxEventData-printMeta)
}

// MarkerTriggers is implemented by backends that run the triggers of the
// trace_marker's event (MarkerEvent) where it happens: MarkerHit runs
// them on one write's text, from task pid (comm, on cpu), whose trace
// entry has time ts.
type MarkerTriggers interface {
	MarkerHit(pid int, comm string, cpu int, ts uint64, text []byte) error
}

// markerTriggers runs the trace_marker event's triggers, when it has
// any, on a write that is recorded: as the kernel's tracing_mark_write,
// after the record is reserved and before it is committed, on the text
// as written (the newline the trace adds is not in it).
func (f *FS) markerTriggers(pid int, comm string, cpu int, ts uint64, text []byte) error {
	mt, ok := f.b.(MarkerTriggers)
	if !ok {
		return nil
	}
	group, name, _ := strings.Cut(MarkerEvent, "/")
	f.mu.Lock()
	n := 0
	for k, l := range f.triggers {
		if k.group == group && k.name == name {
			n += len(l.Triggers)
		}
	}
	f.mu.Unlock()
	if n == 0 {
		return nil
	}
	if err := mt.MarkerHit(pid, comm, cpu, ts, text); err != nil {
		return fmt.Errorf("trace_marker: %w", err)
	}
	// A trigger may have switched events or tracing.
	if ts, ok := f.b.(TriggerStater); ok {
		f.setStaticStates(ts.SyncTriggerState())
	}
	return nil
}

// taskInfo reads a task's command and the CPU it last ran on from /proc.
func taskInfo(pid int) (comm string, cpu int) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", 0
	}
	s := string(b)
	open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || end < open {
		return "", 0
	}
	comm = s[open+1 : end]
	// Fields after the command: state is field 3; processor is field 39.
	rest := strings.Fields(s[end+1:])
	if len(rest) > 36 {
		cpu, _ = strconv.Atoi(rest[36])
	}
	return comm, cpu
}
