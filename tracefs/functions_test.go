package tracefs

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/ktrace-dev/ktrace/internal/vmtest"
	"github.com/ktrace-dev/ktrace/kernel"
)

// The expectations below were read on the pinned 6.12 kernel in the VM
// (testdata/functrace/session.sh; its output is testdata/functrace/6.12.out),
// with the kernel's function list, which the embedded model holds.

func newFuncFS(t *testing.T) *FS {
	t.Helper()
	m, err := kernel.Embedded()
	if err != nil {
		t.Fatal(err)
	}
	static := func() []StaticEvent {
		var out []StaticEvent
		for i, n := range []string{"sched_switch", "sched_wakeup", "sched_process_fork"} {
			out = append(out, StaticEvent{System: "sched", Name: n, ID: 300 + i, Format: "name: " + n + "\n"})
		}
		return out
	}
	return New(&fakeBackend{}, Options{Functions: m.FtraceRecords, Static: static})
}

// shellWrite is busybox's `echo TEXT > name` (or >>): open, write until
// all is taken or a write fails (full_write), close.
func shellWrite(f *FS, name, text string, trunc bool) error {
	flag := os.O_WRONLY | os.O_APPEND
	if trunc {
		flag = os.O_WRONLY | os.O_TRUNC
	}
	h, err := f.Open(name, flag)
	if err != nil {
		return err
	}
	defer h.Close()
	_, err = h.WriteFull([]byte(text + "\n"))
	return err
}

func lines(s ...string) string { return strings.Join(s, "\n") + "\n" }

const allEnabled = "#### all functions enabled ####\n"

func TestFtraceFilterWrites(t *testing.T) {
	f := newFuncFS(t)
	steps := []struct {
		text  string
		trunc bool
		errno syscall.Errno
		want  string // set_ftrace_filter after; "" to skip
	}{
		{"", true, 0, allEnabled},
		{"kernel_clone", true, 0, lines("kernel_clone")},
		{"vfs_readlink vfs_read vfs_readv", true, 0, lines("vfs_readv", "vfs_read", "vfs_readlink")},
		{"kernel_clone", false, 0, lines("kernel_clone", "vfs_readv", "vfs_read", "vfs_readlink")},
		{"kernel_clone", false, 0, lines("kernel_clone", "vfs_readv", "vfs_read", "vfs_readlink")},
		{"schedule\tksys_read\n\n  ksys_write  ", false, 0, lines("kernel_clone", "vfs_readv", "vfs_read", "ksys_read", "ksys_write", "vfs_readlink", "schedule")},
		// Two functions share the name: both are selected.
		{"__send_ipi_mask", true, 0, lines("__send_ipi_mask", "__send_ipi_mask")},
		{"", true, 0, allEnabled},
		{"vfs_rea*", true, 0, lines("vfs_readv", "vfs_read", "vfs_readlink")},
		{"*_sys_getpid", true, 0, lines("__do_sys_getpid")},
		{"*sys_getpi*", true, 0, lines("__do_sys_getpid")},
		{"ksys_rea?", true, 0, lines("ksys_read")},
		{"ksys_[rw]*", true, 0, lines("ksys_readahead", "ksys_read", "ksys_write")},
		{`vfs_rea\d`, true, 0, lines("vfs_read")},
		{"ksys_*_helper", true, 0, lines("ksys_sync_helper")},
		{"vfs_rea*", true, 0, ""},
		{"!vfs_read", false, 0, lines("vfs_readv", "vfs_readlink")},
		{"!vfs_rea*", false, 0, allEnabled},
		{"ksys_read", true, 0, ""},
		{"!nonexistent_fn", false, syscall.EINVAL, lines("ksys_read")},
		{"!*", false, 0, allEnabled},
		// Indices count available_filter_functions from 1.
		{"1", true, 0, lines("__traceiter_initcall_level")},
		{"3 2", false, 0, lines("__traceiter_initcall_level", "__probestub_initcall_level", "__traceiter_initcall_start")},
		{"!2", false, 0, lines("__traceiter_initcall_level", "__traceiter_initcall_start")},
		{"99999999", true, syscall.EINVAL, allEnabled},
		{"0", true, syscall.EINVAL, allEnabled},
		{"0x2", true, 0, lines("__probestub_initcall_level")},
		{"2abc", true, syscall.EINVAL, allEnabled},
		// A failing word fails the write; the words before it stay.
		{"nonexistent_fn", true, syscall.EINVAL, allEnabled},
		{"kernel_clone nonexistent_fn vfs_read", true, syscall.EINVAL, lines("kernel_clone")},
		{"kernel_clone:", true, syscall.EINVAL, allEnabled},
		{"kernel_clone:bogus", true, syscall.EINVAL, ""},
		{strings.Repeat("a", 700), true, syscall.EINVAL, allEnabled},
		{"kernel_clone " + strings.Repeat("a", 700) + " vfs_read", true, syscall.EINVAL, lines("kernel_clone")},
	}
	for i, s := range steps {
		err := shellWrite(f, "set_ftrace_filter", s.text, s.trunc)
		if got := errnoOf(err); (err == nil) != (s.errno == 0) || (err != nil && got != s.errno) {
			t.Errorf("step %d %q: error %v, want %v", i, s.text, err, s.errno)
		}
		if s.want != "" {
			if got := readString(t, f, "set_ftrace_filter"); got != s.want {
				t.Errorf("step %d %q: set_ftrace_filter\n%s\nwant\n%s", i, s.text, got, s.want)
			}
		}
	}
	if got := readString(t, f, "set_ftrace_notrace"); got != "#### no functions disabled ####\n" {
		t.Errorf("set_ftrace_notrace: %q", got)
	}
}

// TestFtraceFilterRawWrites checks what each write(2) takes: blanks and
// one word (ended by a blank or a NUL, which it takes too), continued by
// the next write when it ends mid-word; a word left unfinished is taken
// at the close, its error lost.
func TestFtraceFilterRawWrites(t *testing.T) {
	type w struct {
		data string
		n    int
		err  syscall.Errno
	}
	cases := []struct {
		writes []w
		want   string
	}{
		{[]w{{"kernel_clone vfs_read\n", 13, 0}}, lines("kernel_clone")},
		{[]w{{"  kernel_clone   vfs_read  ", 15, 0}, {"ksys_read", 9, 0}}, lines("kernel_clone", "ksys_read")},
		{[]w{{"kernel_", 7, 0}, {"clone", 5, 0}, {" vfs_", 1, 0}, {"read\n", 0, syscall.EINVAL}}, lines("kernel_clone")},
		{[]w{{"ksys_read", 9, 0}, {"", 0, 0}}, lines("ksys_read")},
		{[]w{{"   ", 3, 0}, {"\n\n", 2, 0}, {"ksys_write\n", 11, 0}}, lines("ksys_write")},
		{[]w{{"ksys_read\x00vfs_read\n", 10, 0}}, lines("ksys_read")},
		{[]w{{"nonexistent_fn\n", 0, syscall.EINVAL}, {"ksys_read\n", 10, 0}}, lines("ksys_read")},
		{[]w{{"nonexistent_fn", 14, 0}}, allEnabled},
	}
	for i, c := range cases {
		f := newFuncFS(t)
		h, err := f.Open("set_ftrace_filter", os.O_WRONLY|os.O_TRUNC)
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range c.writes {
			n, err := h.Write([]byte(x.data))
			if x.err != 0 {
				if !errors.Is(err, x.err) {
					t.Errorf("case %d: write %q: %d, %v; want %v", i, x.data, n, err, x.err)
				}
				continue
			}
			if err != nil || n != x.n {
				t.Errorf("case %d: write %q: %d, %v; want %d", i, x.data, n, err, x.n)
			}
		}
		h.Close()
		if got := readString(t, f, "set_ftrace_filter"); got != c.want {
			t.Errorf("case %d: set_ftrace_filter\n%s\nwant\n%s", i, got, c.want)
		}
	}
}

func TestFtraceMods(t *testing.T) {
	f := newFuncFS(t)
	steps := []struct {
		file, text string
		trunc      bool
		errno      syscall.Errno
		want       string
	}{
		{"set_ftrace_filter", ":mod:ext4", true, 0, lines(":mod:ext4")},
		{"set_ftrace_filter", "*:mod:ext4", false, 0, ""},
		{"set_ftrace_filter", "ext4_*:mod:ext4", false, 0, ""},
		{"set_ftrace_filter", "kernel_clone", false, 0, lines("kernel_clone", "ext4_*:mod:ext4", "*:mod:ext4", ":mod:ext4")},
		{"set_ftrace_filter", "!ext4_*:mod:ext4", false, 0, lines("kernel_clone", "*:mod:ext4", ":mod:ext4")},
		{"set_ftrace_filter", "!foo:mod:ext4", false, syscall.EINVAL, ""},
		{"set_ftrace_filter", "!*:mod:ext4", false, 0, lines("kernel_clone")},
		{"set_ftrace_filter", "xfs_*:mod:xfs", true, 0, lines("xfs_*:mod:xfs")},
		{"set_ftrace_notrace", "*:mod:xfs", true, 0, lines("#### no functions disabled ####", "*:mod:xfs")},
		{"set_ftrace_filter", "*:mod:", true, 0, lines("*:mod:")},
	}
	for i, s := range steps {
		err := shellWrite(f, s.file, s.text, s.trunc)
		if (err == nil) != (s.errno == 0) || (err != nil && errnoOf(err) != s.errno) {
			t.Errorf("step %d %q: error %v, want %v", i, s.text, err, s.errno)
		}
		if s.want != "" {
			if got := readString(t, f, s.file); got != s.want {
				t.Errorf("step %d %q: %s\n%s\nwant\n%s", i, s.text, s.file, got, s.want)
			}
		}
	}
}

func TestFtraceCommands(t *testing.T) {
	f := newFuncFS(t)
	const F = "ksys_msgget"
	steps := []struct {
		text  string
		errno syscall.Errno
	}{
		{F + ":traceoff", 0},
		{F + ":traceoff", syscall.EINVAL}, // already there
		{F + ":traceoff:5", 0},
		{F + ":traceon", 0},
		{F + ":traceon:0x10", 0},
		{F + ":snapshot", 0},
		{F + ":snapshot:2", 0},
		{F + ":stacktrace", 0},
		{F + ":stacktrace:3", 0},
		{F + ":dump", 0},
		{F + ":cpudump", 0},
		{F + ":enable_event:sched:sched_switch", 0},
		{F + ":enable_event:sched:sched_wakeup:2", 0},
		{F + ":disable_event:sched:sched_process_fork", 0},
		{F + ":enable_event:sched:sched_switch", syscall.EINVAL},
		{F + ":traceoff:abc", syscall.EINVAL},
		{F + ":traceoff:-1", syscall.EINVAL},
		{"nonexistent_fn:traceoff", syscall.EINVAL},
		{F + ":enable_event:sched", syscall.EINVAL},
		{F + ":enable_event:sched:nonexistent", syscall.EINVAL},
		{F + ":enable_event", syscall.EINVAL},
	}
	for i, s := range steps {
		err := shellWrite(f, "set_ftrace_filter", s.text, false)
		if (err == nil) != (s.errno == 0) || (err != nil && errnoOf(err) != s.errno) {
			t.Errorf("step %d %q: error %v, want %v", i, s.text, err, s.errno)
		}
	}
	want := lines(allEnabled[:len(allEnabled)-1],
		F+":disable_event:sched:sched_process_fork:unlimited",
		F+":enable_event:sched:sched_wakeup:count=2",
		F+":enable_event:sched:sched_switch:unlimited",
		F+":cpudump:unlimited",
		F+":dump:count=1",
		F+":stacktrace:count=3",
		F+":stacktrace:unlimited",
		F+":snapshot:count=2",
		F+":snapshot:unlimited",
		F+":traceon:count=16",
		F+":traceon:unlimited",
		F+":traceoff:count=5",
		F+":traceoff:unlimited")
	if got := readString(t, f, "set_ftrace_filter"); got != want {
		t.Errorf("set_ftrace_filter\n%s\nwant\n%s", got, want)
	}
	// A truncating open keeps the commands.
	if err := shellWrite(f, "set_ftrace_filter", "kernel_clone", true); err != nil {
		t.Fatal(err)
	}
	if got := readString(t, f, "set_ftrace_filter"); got != "kernel_clone\n"+want[len(allEnabled):] {
		t.Errorf("after a truncating write:\n%s", got)
	}
	removals := []struct {
		text  string
		errno syscall.Errno
	}{
		{"!" + F + ":traceoff", 0},
		{"!" + F + ":traceoff", syscall.ENODEV}, // no uncounted traceoff left
		{"!" + F + ":traceoff:0", 0},
		{"!" + F + ":traceon:", 0},
		{"!*:traceon", 0},
		{"!" + F + ":snapshot", 0},
		{"!" + F + ":snapshot:1", 0},
		{"!" + F + ":stacktrace", 0},
		{"!" + F + ":stacktrace:9", 0},
		{"!" + F + ":dump", 0},
		{"!" + F + ":cpudump", 0},
		{"!" + F + ":enable_event:sched:sched_switch", 0},
		{"!" + F + ":enable_event:sched:sched_wakeup:1", 0},
		{"!" + F + ":disable_event:sched:sched_process_fork", 0},
		{"!" + F + ":disable_event:sched:sched_process_fork", syscall.ENODEV},
		{"!nonexistent_fn:traceoff", syscall.ENODEV},
	}
	for i, s := range removals {
		err := shellWrite(f, "set_ftrace_filter", s.text, false)
		if (err == nil) != (s.errno == 0) || (err != nil && errnoOf(err) != s.errno) {
			t.Errorf("removal %d %q: error %v, want %v", i, s.text, err, s.errno)
		}
	}
	if got := readString(t, f, "set_ftrace_filter"); got != "kernel_clone\n" {
		t.Errorf("after the removals:\n%s", got)
	}
	// An empty count is the counted kind, at -1; what follows the count
	// is ignored.
	for _, s := range []struct{ text, want string }{
		{F + ":traceoff:", F + ":traceoff:count=-1"},
		{F + ":traceoff:3:junk", F + ":traceoff:count=3"},
	} {
		if err := shellWrite(f, "set_ftrace_filter", "", true); err != nil {
			t.Fatal(err)
		}
		if err := shellWrite(f, "set_ftrace_filter", s.text, true); err != nil {
			t.Fatalf("%s: %v", s.text, err)
		}
		if got := readString(t, f, "set_ftrace_filter"); got != allEnabled+s.want+"\n" {
			t.Errorf("%s:\n%s", s.text, got)
		}
		if err := shellWrite(f, "set_ftrace_filter", "!"+strings.TrimPrefix(s.text, ""), false); err != nil {
			t.Fatalf("removing %s: %v", s.text, err)
		}
	}
}

func TestCurrentTracer(t *testing.T) {
	f := newFuncFS(t)
	if got := readString(t, f, "available_tracers"); got != "function_graph function nop\n" {
		t.Errorf("available_tracers: %q", got)
	}
	for _, c := range []struct {
		text  string
		errno syscall.Errno
	}{{"bogus", syscall.EINVAL}, {"", syscall.EINVAL}, {"function nop", syscall.EINVAL}, {"  nop  ", 0}, {"function", 0}} {
		err := shellWrite(f, "current_tracer", c.text, true)
		if (err == nil) != (c.errno == 0) || (err != nil && errnoOf(err) != c.errno) {
			t.Errorf("%q: %v, want %v", c.text, err, c.errno)
		}
	}
	if got := readString(t, f, "current_tracer"); got != "function\n" {
		t.Errorf("current_tracer: %q", got)
	}
	if got := readString(t, f, "trace"); !strings.HasPrefix(got, "# tracer: function\n") {
		t.Errorf("trace header: %q", got[:40])
	}
	// The tracer cannot change while trace_pipe is open.
	h, err := f.Open("trace_pipe", os.O_RDONLY)
	if err != nil {
		t.Fatal(err)
	}
	if err := shellWrite(f, "current_tracer", "nop", true); !errors.Is(err, syscall.EBUSY) {
		t.Errorf("change with trace_pipe open: %v, want EBUSY", err)
	}
	if err := shellWrite(f, "current_tracer", "function", true); err != nil {
		t.Errorf("the same tracer with trace_pipe open: %v", err)
	}
	h.Close()
	if err := shellWrite(f, "current_tracer", "nop", true); err != nil {
		t.Fatal(err)
	}
	// set_ftrace_pid.
	if got := readString(t, f, "set_ftrace_pid"); got != "no pid\n" {
		t.Errorf("set_ftrace_pid: %q", got)
	}
	if err := shellWrite(f, "set_ftrace_pid", "12 3", true); err != nil {
		t.Fatal(err)
	}
	if got := readString(t, f, "set_ftrace_pid"); got != "3\n12\n" {
		t.Errorf("set_ftrace_pid: %q", got)
	}
}

// TestFtraceFilter61 checks what 6.1 does differently, on its snapshot's
// function list (testdata/functrace/6.1.out): an index is read with
// simple_strtoul ("2abc" is 2), and the records of dropped functions
// (__ftrace_invalid_address___N, listed in available_filter_functions)
// match no pattern: "*" selects 35,051 of the 35,609 lines.
func TestFtraceFilter61(t *testing.T) {
	kdir, err := vmtest.KernelsDir()
	if err != nil {
		t.Skip(err)
	}
	m, err := kernel.LoadSnapshot(filepath.Join(kdir, "6.1"))
	if err != nil {
		t.Skipf("6.1 snapshot: %v", err)
	}
	f := New(&fakeBackend{}, Options{Major: 6, Minor: 1, Functions: m.FtraceRecords})
	if n := strings.Count(readString(t, f, "available_filter_functions"), "\n"); n != 35609 {
		t.Errorf("available_filter_functions: %d lines, want 35609", n)
	}
	if err := shellWrite(f, "set_ftrace_filter", "*", true); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(readString(t, f, "set_ftrace_filter"), "\n"); n != 35051 {
		t.Errorf("*: %d functions, want 35051", n)
	}
	if err := shellWrite(f, "set_ftrace_filter", "2abc", true); err != nil {
		t.Fatalf("2abc: %v", err)
	}
	if got := readString(t, f, "set_ftrace_filter"); got != "__traceiter_initcall_start\n" {
		t.Errorf("2abc: %q", got)
	}
}
