package events

import (
	"errors"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/ktrace-dev/ktrace/grammar"
)

// Multi-probe events, removal and enable state, as seen on both kernels.
func TestMultiProbeAndRemoval(t *testing.T) {
	runCases(t, []lineCase{
		{setup: []string{"p:ev vfs_read"}, line: "p:ev vfs_write",
			readback: []string{"p:kprobes/ev vfs_read", "p:kprobes/ev vfs_write"}},
		{setup: []string{"p:ev vfs_read", "p:ev vfs_write"}, line: "p:ev vfs_read",
			errno: eexist, code: grammar.ErrSameProbe, pos: 0,
			readback: []string{"p:kprobes/ev vfs_read", "p:kprobes/ev vfs_write"}},
		{setup: []string{"p:ev vfs_read"}, line: "r:ev vfs_write", errno: eexist, code: grammar.ErrDiffProbeType, pos: 0},
		{setup: []string{"p:ev vfs_read"}, line: "p:ev vfs_write a=%di", errno: eexist, code: grammar.ErrDiffArgType, pos: 15},
		{setup: []string{"p:ev vfs_read a=%di b=%si"}, line: "p:ev vfs_write a=%di c=%si", errno: eexist, code: grammar.ErrDiffArgType, pos: 21},
		{setup: []string{"p:ev vfs_read a=%di b=%si"}, line: "p:ev vfs_write a=%di", errno: eexist, code: grammar.ErrDiffArgType, pos: 21},
		{setup: []string{"p:ev vfs_read a=%di b=%si"}, line: "p:ev vfs_write a=%di b=%si c=%dx", errno: eexist, code: grammar.ErrDiffArgType, pos: 27},
		{setup: []string{"p:ev vfs_read a=%di b=%si"}, line: "p:ev vfs_write a=%di b=%si",
			readback: []string{"p:kprobes/ev vfs_read a=%di b=%si", "p:kprobes/ev vfs_write a=%di b=%si"}},
		{setup: []string{"p:ev vfs_read", "p:ev vfs_write"}, line: "-:ev vfs_read", readback: []string{"p:kprobes/ev vfs_write"}},
		{setup: []string{"p:ev vfs_read", "p:ev vfs_write"}, line: "-:ev", readback: []string{}},
		{setup: []string{"p:ev vfs_read a=%di b=%si", "p:ev vfs_write a=%di b=%si"}, line: "-:ev vfs_write a=%di",
			readback: []string{"p:kprobes/ev vfs_read a=%di b=%si"}},
		{setup: []string{"p:ev vfs_read a=%di b=%si"}, line: "-:ev vfs_read a=%di b=%si c=%dx", errno: enoent},
		{setup: []string{"p:ev vfs_read a=%di b=%si"}, line: "-:ev vfs_write a=%di", errno: enoent},
		{line: "-:ev", errno: enoent},
		{setup: []string{"p:ev vfs_read"}, line: "-:kprobes/ev", readback: []string{}},
		{line: "-:kprobes/", errno: enoent},
		{setup: []string{"p:g1/a vfs_read", "p:g1/b vfs_write", "p:g2/a vfs_read"}, line: "-:g1/", readback: []string{"p:g2/a vfs_read"}},
		{setup: []string{"p:g1/a vfs_read", "p:g2/a vfs_read"}, line: "-:a", readback: []string{}},
		{setup: []string{"p:g1/b vfs_read"}, line: "-:g1.b", errno: enoent},
		{setup: []string{"p:a vfs_read"}, line: "-:a vfs_write", errno: enoent},
		{setup: []string{"r vfs_write"}, line: "-:r_vfs_write_0 vfs_write+0", errno: enoent},
		{setup: []string{"r vfs_write"}, line: "-:r_vfs_write_0 vfs_write", readback: []string{}},
		{kernels: "6.12", setup: []string{"p 0xffffffff8143f694"}, line: "-:p_0xffffffff8143f694 0xffffffff8143f694", readback: []string{}},
		{kernels: "6.12", setup: []string{"p:ev vfs_read+4"}, line: "-:ev vfs_read+4", readback: []string{}},
		{kernels: "6.12", setup: []string{"D:p:ev vfs_read"}, file: DynamicEvents, line: "f:kprobes/ev vfs_read",
			errno: eexist, code: grammar.ErrEventExist, subsys: "trace_fprobe", pos: 0},
		{kernels: "6.12", setup: []string{"D:f:ev vfs_read"}, line: "-:ev", errno: enoent},
		{kernels: "6.12", setup: []string{"D:f:fprobes/fev vfs_read"}, line: "p:fprobes/fev vfs_read",
			errno: eexist, code: grammar.ErrEventExist, pos: 0},
	})
}

func TestEnableBusy(t *testing.T) {
	for _, rel := range []string{"6.1", "6.12"} {
		r := newRegistry(t, rel)
		for _, l := range []string{"p:ev vfs_read", "p:ev2 vfs_read", "p:ev2 vfs_write"} {
			if err := r.Exec(KprobeEvents, l); err != nil {
				t.Fatal(err)
			}
		}
		if err := r.SetEnabled(r.Event("kprobes", "ev"), true); err != nil {
			t.Fatal(err)
		}
		if err := r.Exec(KprobeEvents, "-:ev"); !errors.Is(err, syscall.EBUSY) {
			t.Errorf("%s: remove enabled: %v, want EBUSY", rel, err)
		}
		if err := r.Truncate(KprobeEvents); !errors.Is(err, syscall.EBUSY) {
			t.Errorf("%s: truncate with enabled: %v, want EBUSY", rel, err)
		}
		if got := len(r.Events()); got != 2 {
			t.Errorf("%s: %d events after failed truncate", rel, got)
		}
		// An enabled multi-probe event loses its first probe (it has a
		// sibling) and then refuses to drop the last one.
		if err := r.SetEnabled(r.Event("kprobes", "ev2"), true); err != nil {
			t.Fatal(err)
		}
		if err := r.Exec(KprobeEvents, "-:ev2"); !errors.Is(err, syscall.EBUSY) {
			t.Errorf("%s: remove enabled multi-probe: %v, want EBUSY", rel, err)
		}
		if got, want := r.Readback(KprobeEvents), "p:kprobes/ev vfs_read\np:kprobes/ev2 vfs_write\n"; got != want {
			t.Errorf("%s: readback %q, want %q", rel, got, want)
		}
		r.SetEnabled(r.Event("kprobes", "ev"), false)
		r.SetEnabled(r.Event("kprobes", "ev2"), false)
		if err := r.Truncate(KprobeEvents); err != nil {
			t.Errorf("%s: truncate: %v", rel, err)
		}
		if got := r.Readback(DynamicEvents); got != "" {
			t.Errorf("%s: readback after truncate %q", rel, got)
		}
	}
}

// Truncating kprobe_events leaves fprobes alone even when enabled.
func TestTruncateScope(t *testing.T) {
	r := newRegistry(t, "6.12")
	for _, l := range []string{"f:ev vfs_read", "p:ev2 vfs_read"} {
		if err := r.Exec(DynamicEvents, l); err != nil {
			t.Fatal(err)
		}
	}
	r.SetEnabled(r.Event("fprobes", "ev"), true)
	if err := r.Truncate(KprobeEvents); err != nil {
		t.Fatalf("truncate kprobe_events: %v", err)
	}
	if got := r.Readback(DynamicEvents); got != "f:fprobes/ev vfs_read\n" {
		t.Errorf("readback %q", got)
	}
	if err := r.Truncate(DynamicEvents); !errors.Is(err, syscall.EBUSY) {
		t.Errorf("truncate dynamic_events: %v, want EBUSY", err)
	}
}

// Event IDs start at the kernel's first dynamic ID and reuse freed ones.
func TestEventIDs(t *testing.T) {
	r := newRegistry(t, "6.12")
	for _, l := range []string{"p:a vfs_read", "r:b vfs_read", "p:c vfs_write"} {
		if err := r.Exec(KprobeEvents, l); err != nil {
			t.Fatal(err)
		}
	}
	ids := []int{}
	for _, e := range r.Events() {
		ids = append(ids, e.ID)
	}
	if ids[0] != 1554 || ids[1] != 1555 || ids[2] != 1556 {
		t.Errorf("ids %v", ids)
	}
	// As seen on 6.12: the freed ID is reused, lowest gap first.
	r.Exec(KprobeEvents, "-:a")
	r.Exec(KprobeEvents, "p:d vfs_read")
	if id := r.Event("kprobes", "d").ID; id != 1554 {
		t.Errorf("reused id %d, want 1554", id)
	}
	r.Exec(KprobeEvents, "-:c")
	r.Exec(KprobeEvents, "p:e vfs_read")
	r.Exec(KprobeEvents, "p:f vfs_read")
	if e, f := r.Event("kprobes", "e").ID, r.Event("kprobes", "f").ID; e != 1556 || f != 1557 {
		t.Errorf("ids e=%d f=%d, want 1556 1557", e, f)
	}
	if id := newRegistry(t, "6.1"); id.firstID != 1392 {
		t.Errorf("6.1 first id %d, want 1392", id.firstID)
	}
}

// Multi-line writes, comments, NUL bytes and the line length limit, as
// the kernel's trace_parse_run_command handles them.
func TestWrite(t *testing.T) {
	tests := []struct {
		data     string
		errno    syscall.Errno
		readback string
	}{
		{"p:a vfs_read\nq x\np:b vfs_write\n", syscall.EINVAL, "p:kprobes/a vfs_read\n"},
		{"p:a vfs_read # comment\n#p:b vfs_write\n\n  \np:c vfs_write\t# x", 0, "p:kprobes/a vfs_read\np:kprobes/c vfs_write\n"},
		{"p:a vfs_read\x00p:b vfs_write\n", syscall.EINVAL, ""},
		{"p:a vfs_read\np:b vfs_write\x00\n", syscall.EINVAL, "p:kprobes/a vfs_read\n"},
		{"p:a vfs_read\n-:a\n", 0, ""},
		{"p:a vfs_read\n-:b\n", syscall.ENOENT, "p:kprobes/a vfs_read\n"},
		{"p:a vfs_read a=" + strings.Repeat("x", 4080) + "\n", syscall.EINVAL, ""},
		{strings.Repeat("\n", 5000) + "p:a vfs_read\n", 0, "p:kprobes/a vfs_read\n"},
		{strings.Repeat("p:a vfs_read\n-:a\n", 300) + "p:b vfs_read", 0, "p:kprobes/b vfs_read\n"},
	}
	for _, tt := range tests {
		r := newRegistry(t, "6.12")
		n, err := r.Write(KprobeEvents, []byte(tt.data))
		if tt.errno == 0 {
			if err != nil || n != len(tt.data) {
				t.Errorf("%.40q: n=%d err=%v", tt.data, n, err)
			}
		} else if !errors.Is(err, tt.errno) {
			t.Errorf("%.40q: err=%v, want %v", tt.data, err, tt.errno)
		}
		if got := r.Readback(KprobeEvents); got != tt.readback {
			t.Errorf("%.40q: readback %q, want %q", tt.data, got, tt.readback)
		}
	}
	// Long lines written with one write(2) (busybox dd on both kernels):
	// a line fits when it and its newline fit in the 4095-byte chunk, or
	// when it is the unterminated end of the data.
	long := func(name string, total int) string {
		base := "p:" + name + " vfs_read #"
		return base + strings.Repeat("x", total-len(base))
	}
	limits := []struct {
		data     string
		errno    syscall.Errno
		readback string
	}{
		{long("a", 4094) + "\np:b vfs_write\n", 0, "p:kprobes/a vfs_read\np:kprobes/b vfs_write\n"},
		{long("a", 4095) + "\np:b vfs_write\n", syscall.EINVAL, ""},
		{long("a", 4095), 0, "p:kprobes/a vfs_read\n"},
		{long("a", 4096), syscall.EINVAL, ""},
		{long("a", 3000) + "\n" + long("b", 2000) + "\n" + long("c", 3500) + "\n", 0,
			"p:kprobes/a vfs_read\np:kprobes/b vfs_read\np:kprobes/c vfs_read\n"},
		{"p:a vfs_read\n" + long("b", 4094) + "\n", 0, "p:kprobes/a vfs_read\np:kprobes/b vfs_read\n"},
		{"p:a vfs_read\n" + long("b", 4095) + "\n", syscall.EINVAL, "p:kprobes/a vfs_read\n"},
	}
	for i, tt := range limits {
		r := newRegistry(t, "6.1")
		_, err := r.Write(KprobeEvents, []byte(tt.data))
		if (tt.errno == 0) != (err == nil) || (tt.errno != 0 && !errors.Is(err, tt.errno)) {
			t.Errorf("limit case %d: err %v, want %v", i, err, tt.errno)
		}
		if got := r.Readback(KprobeEvents); got != tt.readback {
			t.Errorf("limit case %d: readback %q, want %q", i, got, tt.readback)
		}
	}

	// dynamic_events: '!' removes too; "-p:a" and "-x:a" are malformed.
	r := newRegistry(t, "6.12")
	r.Exec(DynamicEvents, "p:a vfs_read")
	if err := r.Exec(DynamicEvents, "-p:a"); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("-p:a: %v", err)
	}
	if err := r.Exec(DynamicEvents, "!p:a"); err != nil {
		t.Errorf("!p:a: %v", err)
	}
	if got := r.Readback(DynamicEvents); got != "" {
		t.Errorf("readback %q", got)
	}
}

// fprobe and tracepoint lines of dynamic_events.
func TestFprobeLines(t *testing.T) {
	fp := "trace_fprobe"
	D := DynamicEvents
	runCases(t, []lineCase{
		{kernels: "6.1", file: D, line: "f vfs_read", errno: einval},
		{kernels: "6.1", file: D, line: "t sched_switch", errno: einval},
		{kernels: "6.1", file: D, line: "f10 vfs_read", errno: einval},
		{kernels: "6.12", file: D, line: "f vfs_read", readback: []string{"f:fprobes/vfs_read__entry vfs_read"}},
		{kernels: "6.12", file: D, line: "f vfs_read%return", readback: []string{"f:fprobes/vfs_read__exit vfs_read%return"}},
		{kernels: "6.12", file: D, line: "f10 vfs_read", errno: einval, code: grammar.ErrBadMaxactType, subsys: fp, pos: 1},
		{kernels: "6.12", file: D, line: "f10 vfs_read%return", readback: []string{"f10:fprobes/vfs_read__exit vfs_read%return"}},
		{kernels: "6.12", file: D, line: "f0 vfs_read%return", errno: einval, code: grammar.ErrBadMaxact, subsys: fp, pos: 1},
		{kernels: "6.12", file: D, line: "f5000 vfs_read%return", errno: einval, code: grammar.ErrMaxactTooBig, subsys: fp, pos: 1},
		{kernels: "6.12", file: D, line: "fx vfs_read", readback: []string{"f:fprobes/vfs_read__entry vfs_read"}},
		{kernels: "6.12", file: D, line: "f:ev vfs_read", readback: []string{"f:fprobes/ev vfs_read"}},
		{kernels: "6.12", file: D, line: "t sched_switch", readback: []string{"t:tracepoints/sched_switch sched_switch"}},
		{kernels: "6.12", file: D, line: "t:ev sched_switch", readback: []string{"t:tracepoints/ev sched_switch"}},
		{kernels: "6.12", file: D, line: "t nosuch_tp", readback: []string{"t:tracepoints/nosuch_tp nosuch_tp"}},
		{kernels: "6.12", file: D, line: "t 1abc", readback: []string{"t:tracepoints/_1abc 1abc"}},
		{kernels: "6.12", file: D, line: "f vfs_read $retval", readback: []string{"f:fprobes/vfs_read__exit vfs_read%return arg1=$retval"}},
		{kernels: "6.12", file: D, line: "f vfs_rea*", readback: []string{"f:fprobes/vfs_rea___entry vfs_rea*"}},
		{kernels: "6.12", file: D, line: "f vfs_read%ret", errno: einval, code: grammar.ErrBadAddrSuffix, subsys: fp, pos: 10},
		{kernels: "6.12", file: D, line: "t sched_switch%return", errno: einval, code: grammar.ErrBadAddrSuffix, subsys: fp, pos: 14},
		{kernels: "6.12", file: D, line: "t sched-switch", errno: einval, code: grammar.ErrBadTPName, subsys: fp, pos: 7},
		{kernels: "6.12", file: D, line: "t sched_switch $retval", errno: einval, code: grammar.ErrRetvalOnProbe, subsys: fp, pos: 15},
		{kernels: "6.12", file: D, line: "t sched_switch a=$retval", errno: einval, code: grammar.ErrRetvalOnProbe, subsys: fp, pos: 17},
		{kernels: "6.12", file: D, line: "f nosuchfunc", errno: einval, code: grammar.ErrFailRegProbe, subsys: fp, pos: 2},
		{kernels: "6.12", file: D, line: "f jiffies", errno: einval, code: grammar.ErrFailRegProbe, subsys: fp, pos: 2},
		{kernels: "6.12", file: D, line: "f BIT_initDStream", errno: einval, code: grammar.ErrFailRegProbe, subsys: fp, pos: 2},
		{kernels: "6.12", file: D, line: "f vfs_read+4", errno: einval, code: grammar.ErrFailRegProbe, subsys: fp, pos: 2},
		{kernels: "6.12", file: D, line: "f:ev vfs_read$", errno: einval, code: grammar.ErrFailRegProbe, subsys: fp, pos: 5},
		{kernels: "6.12", file: D, line: "f do_int3", readback: []string{"f:fprobes/do_int3__entry do_int3"}},
		{kernels: "6.12", file: D, line: "p vfs_read", readback: []string{"p:kprobes/p_vfs_read_0 vfs_read"}},
		{kernels: "6.12", file: D, line: "q vfs_read", errno: einval},
		{kernels: "6.12", file: D, setup: []string{"f:ev vfs_read"}, line: "f:ev vfs_read%return",
			errno: eexist, code: grammar.ErrDiffProbeType, subsys: fp, pos: 0},
		{kernels: "6.12", file: D, setup: []string{"f:ev vfs_read"}, line: "f:ev vfs_write",
			readback: []string{"f:fprobes/ev vfs_read", "f:fprobes/ev vfs_write"}},
		{kernels: "6.12", file: D, setup: []string{"f:ev vfs_read", "f:ev vfs_write"}, line: "f:ev vfs_write",
			errno: eexist, code: grammar.ErrSameProbe, subsys: fp, pos: 0},
		{kernels: "6.12", file: D, setup: []string{"t sched_switch"}, line: "t sched_switch prev",
			errno: eexist, code: grammar.ErrDiffArgType, subsys: fp, pos: 15},
		{kernels: "6.12", file: D, setup: []string{"f:ev vfs_read", "p:ev2 vfs_read"}, line: "-:ev",
			readback: []string{"p:kprobes/ev2 vfs_read"}},
		{kernels: "6.12", file: D, setup: []string{"f:ev vfs_read"}, line: "-:fprobes/ev vfs_read", readback: []string{}},
		{kernels: "6.12", file: D, line: "f ZSTD_decompressSequencesSplitLitBuffer_default.constprop.0%return",
			readback: []string{"f:fprobes/ZSTD_decompressSequencesSplitLitBuffer_default_constprop_0__exi ZSTD_decompressSequencesSplitLitBuffer_default.constprop.0%return"}},
		{kernels: "6.12", file: D, line: "t:abc/ 1abc", readback: []string{"t:abc/_1abc 1abc"}},
		{kernels: "6.12", file: D, setup: []string{"f vfs_read%return"}, line: "-:fprobes/vfs_read__exit vfs_read%return", errno: enoent},
		{kernels: "6.12", file: D, setup: []string{"f vfs_read%return"}, line: "-:fprobes/vfs_read__exit vfs_read", readback: []string{}},
		{kernels: "6.12", file: D, setup: []string{"f:ev vfs_read", "p:ev vfs_write"}, line: "-:ev", readback: []string{}},
		{kernels: "6.12", file: D, setup: []string{"f:ev vfs_read", "p:ev vfs_write"}, line: "-:fprobes/ev", readback: []string{"p:kprobes/ev vfs_write"}},
		{kernels: "6.12", file: D, line: "f vfs_read @nosuch", errno: enoent, code: grammar.ErrBadProbeAddr, subsys: fp, pos: 2},
		{kernels: "6.12", file: D, line: "t nosuchtp @nosuch", errno: enoent, code: grammar.ErrBadProbeAddr, subsys: fp, pos: 2},
		{kernels: "6.12", file: D, line: "f jiffies @nosuch", errno: enoent, code: grammar.ErrBadProbeAddr, subsys: fp, pos: 2},
		{kernels: "6.12", file: D, setup: []string{"t nosuchtp"}, line: "t nosuchtp", errno: eexist, code: grammar.ErrSameProbe, subsys: fp, pos: 0},
	})
}

// The registry is safe for concurrent use (run with -race).
func TestConcurrentUse(t *testing.T) {
	r := newRegistry(t, "6.12")
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				name := "ev" + string(rune('a'+g))
				r.Exec(KprobeEvents, "p:"+name+" vfs_read")
				r.Readback(DynamicEvents)
				r.Events()
				r.Exec(KprobeEvents, "-:"+name)
			}
		}(g)
	}
	wg.Wait()
	if got := r.Readback(DynamicEvents); got != "" {
		t.Errorf("readback after concurrent add/remove: %q", got)
	}
}

// Events and Event hand out snapshots: reading them races with nothing that
// writers do to the live events (run with -race).
func TestSnapshotsUnderConcurrentWriters(t *testing.T) {
	r := newRegistry(t, "6.12")
	if err := r.Exec(KprobeEvents, "p:ev vfs_read"); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		for i := 0; i < 200; i++ {
			if ev := r.Event("kprobes", "ev"); ev != nil {
				r.SetEnabled(ev, i%2 == 0)
				r.SetEnabled(ev, false)
			}
			r.Exec(KprobeEvents, "p:ev vfs_write")
			r.Exec(KprobeEvents, "-:ev vfs_write")
		}
	}()
	go func() {
		defer wg.Done()
		for i := 0; i < 200; i++ {
			for _, e := range r.Events() {
				_ = e.Enabled
				_ = len(e.Probes)
				_ = e.Format()
			}
		}
	}()
	wg.Wait()
	ev := r.Event("kprobes", "ev")
	if ev == nil || ev.Enabled || len(ev.Probes) != 1 {
		t.Fatalf("after concurrent use: %+v", ev)
	}
	// A snapshot taken before a change does not see it.
	if err := r.SetEnabled(ev, true); err != nil {
		t.Fatal(err)
	}
	if ev.Enabled {
		t.Error("SetEnabled changed the caller's snapshot")
	}
	if !r.Event("kprobes", "ev").Enabled {
		t.Error("SetEnabled through a snapshot did not reach the registry")
	}
}

// Define reports the event a line created or added a probe to.
func TestDefineReturnsEvent(t *testing.T) {
	r := newRegistry(t, "6.12")
	ev, err := r.Define(KprobeEvents, "p:g/ev vfs_read a=%di")
	if err != nil || ev == nil || ev.Group != "g" || ev.Name != "ev" || len(ev.Probes) != 1 {
		t.Fatalf("first probe: %+v, %v", ev, err)
	}
	ev2, err := r.Define(KprobeEvents, "p:g/ev vfs_write a=%di")
	if err != nil || ev2 == nil || ev2.ID != ev.ID || len(ev2.Probes) != 2 {
		t.Fatalf("second probe of the event: %+v, %v", ev2, err)
	}
	if ev3, err := r.Define(KprobeEvents, "r vfs_read"); err != nil || ev3 == nil || ev3.Name != "r_vfs_read_0" {
		t.Fatalf("automatic name: %+v, %v", ev3, err)
	}
	for _, line := range []string{"-:g/ev vfs_write", "", "# comment"} {
		if ev, err := r.Define(KprobeEvents, line); err != nil || ev != nil {
			t.Errorf("%q: %+v, %v; want no event, no error", line, ev, err)
		}
	}
	if ev, err := r.Define(KprobeEvents, "p:g/bad vfs_read +0(%di"); err == nil || ev != nil {
		t.Errorf("rejected line: %+v, %v; want an error and no event", ev, err)
	}
	if ev, err := r.Define(KprobeEvents, "p:g/bad vfs_read"); err != nil || ev == nil || len(ev.Probes) != 1 {
		t.Errorf("after a rejected line: %+v, %v", ev, err)
	}
}

// An empty module name ("p :SYM") is accepted and left unarmed on both
// kernels, as for a module that is not loaded: validate_probe_symbol finds
// no module named "" and defers, and kallsyms_lookup_name(":SYM") finds
// nothing. A named module that is loaded arms the probe.
func TestEmptyModuleIsPending(t *testing.T) {
	for _, release := range []string{"6.1", "6.12"} {
		for _, tc := range []struct {
			line    string
			pending bool
		}{
			{"p:ev :vfs_read", true},
			{"p:ev :no_such_function", true},
			{"r:ev :vfs_read", true},
			{"p:ev vfs_read", false},
			{"p:ev vmlinux:vfs_read", true},
		} {
			r := newRegistry(t, release)
			if _, err := r.Write(KprobeEvents, []byte(tc.line+"\n")); err != nil {
				t.Errorf("%s: %s: %v", release, tc.line, err)
				continue
			}
			evs := r.Events()
			if len(evs) != 1 || len(evs[0].Probes) != 1 {
				t.Fatalf("%s: %s: events %v", release, tc.line, evs)
			}
			if got := evs[0].Probes[0].Pending; got != tc.pending {
				t.Errorf("%s: %s: pending %v, want %v", release, tc.line, got, tc.pending)
			}
		}
	}
}
