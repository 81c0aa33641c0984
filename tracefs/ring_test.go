package tracefs

import (
	"io"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// lockedBackend makes fakeBackend safe for the concurrent readers and
// writers of the trace_pipe tests; fail names events whose enable fails.
type lockedBackend struct {
	mu   sync.Mutex
	b    fakeBackend
	fail map[string]syscall.Errno
}

func (l *lockedBackend) Write(f ControlFile, data []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(f, data)
}
func (l *lockedBackend) Truncate(f ControlFile) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Truncate(f)
}
func (l *lockedBackend) Readback(f ControlFile) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Readback(f)
}
func (l *lockedBackend) Events() []EventInfo {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Events()
}
func (l *lockedBackend) Format(g, n string) (string, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Format(g, n)
}
func (l *lockedBackend) SetEnabled(g, n string, on bool) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if e, ok := l.fail[g+"/"+n]; ok && on {
		return e
	}
	return l.b.SetEnabled(g, n, on)
}

const (
	lineA = "              dd-120     [001] .....    10.000001: a: (vfs_read+0x0/0x140)\n"
	lineB = "              dd-120     [000] .....    10.000002: b: (vfs_read+0x0/0x140)\n"
)

func TestTraceRing(t *testing.T) {
	fsys := New(&lockedBackend{}, Options{CPUs: 2})
	// Out-of-order arrival from two sources is shown in time order.
	fsys.Record(2, []byte(strings.TrimSuffix(lineB, "\n")))
	fsys.Record(1, []byte(lineA))
	want := "# tracer: nop\n#\n# entries-in-buffer/entries-written: 2/2   #P:2\n"
	got := readString(t, fsys, "trace")
	if !strings.HasPrefix(got, want) || !strings.HasSuffix(got, "|         |\n"+lineA+lineB) {
		t.Fatalf("trace:\n%s", got)
	}
	// trace_pipe consumes; consumed entries leave both counts (6.1 and
	// 6.12 show 0/0 after cat trace_pipe).
	if got := readString(t, fsys, "trace_pipe"); got != lineA+lineB {
		t.Errorf("trace_pipe = %q", got)
	}
	if got := readString(t, fsys, "trace"); !strings.Contains(got, "entries-written: 0/0 ") || strings.Contains(got, "vfs_read") {
		t.Errorf("trace after trace_pipe:\n%s", got)
	}
	// A plain write leaves the ring; echo > trace (O_TRUNC) clears it.
	fsys.Record(3, []byte(lineA))
	if err := writeFile(fsys, "trace", "", false); err != nil {
		t.Fatal(err)
	}
	if got := readString(t, fsys, "trace"); !strings.Contains(got, "entries-written: 1/1 ") {
		t.Errorf("trace after append write:\n%s", got)
	}
	if err := writeFile(fsys, "trace", "data", true); err != nil {
		t.Fatal(err)
	}
	if got := readString(t, fsys, "trace"); !strings.Contains(got, "entries-written: 0/0 ") {
		t.Errorf("trace after echo > trace:\n%s", got)
	}
	// tracing_on 0 records nothing.
	if err := writeFile(fsys, "tracing_on", "0", false); err != nil {
		t.Fatal(err)
	}
	if fsys.Record(4, []byte(lineA)) {
		t.Error("Record kept an entry with tracing_on 0")
	}
	if got := readString(t, fsys, "trace"); !strings.Contains(got, "entries-written: 0/0 ") {
		t.Errorf("trace with tracing_on 0:\n%s", got)
	}
}

// With PipeBlocks a trace_pipe read waits for entries while an event is
// enabled, and ends when the events are disabled or the file is closed.
func TestTracePipeBlocks(t *testing.T) {
	b := &lockedBackend{}
	fsys := New(b, Options{PipeBlocks: true})
	if err := writeFile(fsys, "kprobe_events", "kprobes/a", false); err != nil {
		t.Fatal(err)
	}
	// Nothing enabled: no wait.
	if got := readString(t, fsys, "trace_pipe"); got != "" {
		t.Fatalf("trace_pipe = %q", got)
	}
	if err := writeFile(fsys, "events/kprobes/a/enable", "1", false); err != nil {
		t.Fatal(err)
	}
	h, err := fsys.Open("trace_pipe", os.O_RDONLY)
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		s   string
		err error
	}
	read := func() chan result {
		c := make(chan result, 1)
		go func() {
			buf := make([]byte, 4096)
			n, err := h.Read(buf)
			c <- result{string(buf[:n]), err}
		}()
		return c
	}
	c := read()
	select {
	case r := <-c:
		t.Fatalf("read returned before any entry: %q, %v", r.s, r.err)
	case <-time.After(50 * time.Millisecond):
	}
	fsys.Record(1, []byte(lineA))
	if r := <-c; r.s != lineA || r.err != nil {
		t.Errorf("read = %q, %v; want the entry", r.s, r.err)
	}
	// Disabling the event ends a waiting read.
	c = read()
	time.Sleep(20 * time.Millisecond)
	if err := writeFile(fsys, "events/enable", "0", false); err != nil {
		t.Fatal(err)
	}
	if r := <-c; r.s != "" || r.err != io.EOF {
		t.Errorf("read after disable = %q, %v; want EOF", r.s, r.err)
	}
	// Closing the file ends a waiting read too.
	if err := writeFile(fsys, "events/enable", "1", false); err != nil {
		t.Fatal(err)
	}
	c = read()
	time.Sleep(20 * time.Millisecond)
	h.Close()
	select {
	case <-c:
	case <-time.After(5 * time.Second):
		t.Fatal("read still waiting after Close")
	}
}

// A group enable goes on past an event that fails and returns the first
// error, leaving the others enabled (__ftrace_set_clr_event).
func TestGroupEnableFailure(t *testing.T) {
	b := &lockedBackend{fail: map[string]syscall.Errno{"g/bad": syscall.ENOENT}}
	fsys := New(b, Options{})
	for _, l := range []string{"g/ok1", "g/bad", "g/ok2"} {
		if err := writeFile(fsys, "kprobe_events", l, false); err != nil {
			t.Fatal(err)
		}
	}
	if err := writeFile(fsys, "events/g/enable", "1", false); err != syscall.ENOENT {
		t.Errorf("group enable = %v, want ENOENT", err)
	}
	for ev, want := range map[string]string{"ok1": "1\n", "bad": "0\n", "ok2": "1\n"} {
		if got := readString(t, fsys, "events/g/"+ev+"/enable"); got != want {
			t.Errorf("%s enable = %q, want %q", ev, got, want)
		}
	}
}

// A full ring drops its oldest entries; they still count as written. Its
// size follows buffer_size_kb: 2048 KiB is 515 pages of 4080 bytes, four
// times that of text holds 8 of the 1 MiB lines.
func TestTraceRingOverrun(t *testing.T) {
	fsys := New(&lockedBackend{}, Options{})
	if err := writeFile(fsys, "buffer_size_kb", "2048", false); err != nil {
		t.Fatal(err)
	}
	line := strings.Repeat("x", 1<<20)
	for i := 0; i < 10; i++ {
		fsys.Record(uint64(i), []byte(line))
	}
	got := readString(t, fsys, "trace")
	if !strings.Contains(got, "entries-in-buffer/entries-written: 8/10 ") {
		t.Errorf("trace header after overrun: %q", got[:120])
	}
}

// syncBackend holds records back until Sync, as the eBPF backend's ring
// buffer does.
type syncBackend struct {
	lockedBackend
	fs      *FS
	pending []string
}

func (s *syncBackend) Sync() {
	for i, l := range s.pending {
		s.fs.Record(uint64(i), []byte(l))
	}
	s.pending = nil
}

// trace, echo > trace and tracing_on see every hit made before them.
func TestTraceSync(t *testing.T) {
	b := &syncBackend{}
	fsys := New(b, Options{})
	b.fs = fsys
	b.pending = []string{lineA}
	if got := readString(t, fsys, "trace"); !strings.HasSuffix(got, lineA) {
		t.Errorf("trace lacks the held-back hit:\n%s", got)
	}
	b.pending = []string{lineB}
	if err := writeFile(fsys, "trace", "", true); err != nil {
		t.Fatal(err)
	}
	if got := readString(t, fsys, "trace"); !strings.Contains(got, "entries-written: 0/0 ") {
		t.Errorf("a hit from before echo > trace survived it:\n%s", got)
	}
	b.pending = []string{lineA}
	if err := writeFile(fsys, "tracing_on", "0", false); err != nil {
		t.Fatal(err)
	}
	if got := readString(t, fsys, "trace"); !strings.HasSuffix(got, lineA) {
		t.Errorf("a hit from before tracing_on 0 was dropped:\n%s", got)
	}
	// A reader that pauses recording (pause-on-trace) sees the hits
	// made before it opened trace.
	for _, w := range [][2]string{{"tracing_on", "1"}, {"options/pause-on-trace", "1"}, {"trace", ""}} {
		if err := writeFile(fsys, w[0], w[1], w[0] == "trace"); err != nil {
			t.Fatal(err)
		}
	}
	b.pending = []string{lineB}
	if got := readString(t, fsys, "trace"); !strings.HasSuffix(got, lineB) {
		t.Errorf("a hit from before a pausing open was dropped:\n%s", got)
	}
}

// TestRecordTaskLatestComm: the TASK-PID column of a RecordTask entry
// shows the pid's command at its latest recorded event, when the trace is
// read (the kernel's saved_cmdlines): what a shell's child did before it
// exec'd cat reads as cat's. pid 0 is <idle>.
func TestRecordTaskLatestComm(t *testing.T) {
	f := New(nil, Options{PipeBlocks: false})
	f.RecordTask(1, 42, "sh", []byte(" [000] ..... 1.000001: ev: (vfs_write+0x0/0x10)"))
	f.RecordTask(2, 42, "cat", []byte(" [000] ..... 1.000002: ev: (vfs_read+0x0/0x10)\n"))
	f.RecordTask(3, 0, "swapper/0", []byte(" [000] ..... 1.000003: ev: (vfs_read+0x0/0x10)"))
	text := f.traceText()
	for _, want := range []string{
		"             cat-42      [000] ..... 1.000001: ev: (vfs_write+0x0/0x10)\n",
		"             cat-42      [000] ..... 1.000002: ev: (vfs_read+0x0/0x10)\n",
		"          <idle>-0       [000] ..... 1.000003: ev: (vfs_read+0x0/0x10)\n",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("trace lacks %q:\n%s", want, text)
		}
	}
}
