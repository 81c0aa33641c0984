package kernel

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/ktrace-dev/ktrace/grammar"
)

// TestFuncsVerdicts checks Funcs against what 6.12.95 answers for "p FUNC"
// and "f FUNC" (tools/vmsh): vfs_read both accepted; do_int3 p
// FAIL_REG_PROBE (blacklist), f accepted; __schedule and jiffies both
// FAIL_REG_PROBE; active_show p NON_UNIQ_SYMBOL, f accepted;
// do_sys_opnat2 p BAD_PROBE_ADDR (EINVAL on 6.12).
func TestFuncsVerdicts(t *testing.T) {
	m, err := Embedded()
	if err != nil {
		t.Fatal(err)
	}
	fs, err := m.Funcs([]string{"vfs_read", "do_int3", "__schedule", "active_show", "jiffies", "do_sys_opnat2"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]struct {
		kprobe, fprobe bool
		code           grammar.Code
	}{
		"vfs_read":      {true, true, grammar.ErrNone},
		"do_int3":       {false, true, grammar.ErrFailRegProbe},
		"__schedule":    {false, false, grammar.ErrFailRegProbe},
		"active_show":   {false, true, grammar.ErrNonUniqSymbol},
		"jiffies":       {false, false, grammar.ErrFailRegProbe},
		"do_sys_opnat2": {false, false, grammar.ErrBadProbeAddr},
	}
	if len(fs) != len(want) {
		t.Fatalf("got %d functions, want %d: %+v", len(fs), len(want), fs)
	}
	for i, f := range fs {
		if i > 0 && fs[i-1].Name >= f.Name {
			t.Errorf("not sorted: %s after %s", f.Name, fs[i-1].Name)
		}
		w, ok := want[f.Name]
		if !ok {
			t.Errorf("unexpected %s", f.Name)
			continue
		}
		if f.Kprobe != w.kprobe || f.Fprobe != w.fprobe || f.KprobeCode != w.code {
			t.Errorf("%s: kprobe %v (%s, %q) fprobe %v (%q), want kprobe %v (%s) fprobe %v",
				f.Name, f.Kprobe, f.KprobeCode.Name(), f.KprobeWhy, f.Fprobe, f.FprobeWhy, w.kprobe, w.code.Name(), w.fprobe)
		}
		if !f.Kprobe && f.KprobeErrno != syscall.EINVAL {
			t.Errorf("%s: errno %v, want EINVAL", f.Name, f.KprobeErrno)
		}
	}
}

// TestFuncsAgreeWithCheck checks, for every function a glob matches, that
// the kprobe verdict is what the probe registration rules give for
// "p FUNC" (the rules the conformance corpus checks against the kernels).
func TestFuncsAgreeWithCheck(t *testing.T) {
	m, err := Embedded()
	if err != nil {
		t.Fatal(err)
	}
	fs, err := m.Funcs([]string{"vfs_*", "tcp_v4_*", "*int3*"})
	if err != nil {
		t.Fatal(err)
	}
	if len(fs) < 50 {
		t.Fatalf("only %d functions", len(fs))
	}
	for _, f := range fs {
		if f.Count != m.NumberOfSameSymbols(f.Spec()) {
			t.Errorf("%s: count %d, NumberOfSameSymbols %d", f.Name, f.Count, m.NumberOfSameSymbols(f.Spec()))
		}
		if f.Count != 1 {
			continue
		}
		code, _ := m.CheckProbeAddress(f.Addr, false)
		if (code == grammar.ErrNone) != f.Kprobe || (!f.Kprobe && code != f.KprobeCode) {
			t.Errorf("%s: Funcs says %v/%s, CheckProbeAddress %s", f.Name, f.Kprobe, f.KprobeCode.Name(), code.Name())
		}
		if f.Fprobe != m.FtraceMatch(f.Name) {
			t.Errorf("%s: fprobe %v, ftrace %v", f.Name, f.Fprobe, m.FtraceMatch(f.Name))
		}
	}
}

func TestFuncsGlobs(t *testing.T) {
	m, err := Embedded()
	if err != nil {
		t.Fatal(err)
	}
	fs, err := m.Funcs([]string{"vfs_rea?", "vfs_read*"})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range fs {
		names = append(names, f.Name)
	}
	if got := len(names); got != 3 || names[0] != "vfs_read" || names[1] != "vfs_readlink" || names[2] != "vfs_readv" {
		t.Errorf("got %v", names)
	}
	if _, err := m.Funcs([]string{"[x"}); err == nil {
		t.Error("bad glob accepted")
	}
	fs, _ = m.Funcs([]string{"nomod:foo"})
	if len(fs) != 1 || fs[0].Module != "nomod" || fs[0].Kprobe || fs[0].KprobeCode != grammar.ErrNone {
		t.Errorf("module not loaded: %+v", fs)
	}
}

func TestNearestFunc(t *testing.T) {
	m, err := Embedded()
	if err != nil {
		t.Fatal(err)
	}
	for in, want := range map[string]string{"do_sys_opnat2": "do_sys_openat2", "vfs_raed": "vfs_read", "schedul": "schedule"} {
		if got, ok := m.NearestFunc(in); !ok || got != want {
			t.Errorf("NearestFunc(%q) = %q, %v; want %q", in, got, ok, want)
		}
	}
	if got, ok := m.NearestFunc("zzzzqqqqxxxx"); ok {
		t.Errorf("NearestFunc of nonsense = %q", got)
	}
}

// TestTracepoints checks the embedded formats against the snapshot they
// were packed from, when it is present, and sched_switch's fields as
// 6.12.95's tracefs shows them.
func TestTracepoints(t *testing.T) {
	m, err := Embedded()
	if err != nil {
		t.Fatal(err)
	}
	tps, _, err := m.Tracepoints()
	if err != nil {
		t.Fatal(err)
	}
	var sw *Tracepoint
	for i := range tps {
		if tps[i].System == "sched" && tps[i].Name == "sched_switch" {
			sw = &tps[i]
		}
	}
	if sw == nil {
		t.Fatal("no sched:sched_switch")
	}
	var got []string
	for _, f := range sw.Fields() {
		if !f.Common {
			got = append(got, f.Type+" "+f.Name)
		}
	}
	want := []string{"char[16] prev_comm", "pid_t prev_pid", "int prev_prio", "long prev_state", "char[16] next_comm", "pid_t next_pid", "int next_prio"}
	if len(got) != len(want) {
		t.Fatalf("fields %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("field %d: %q, want %q", i, got[i], want[i])
		}
	}
	if !m.HasTracepoint("sched_switch") || !m.HasProbeStub("sched_switch") {
		t.Error("kallsyms lacks __tracepoint_sched_switch or __probestub_sched_switch")
	}
	dir := filepath.Join("..", "..", "shared", "kernels", "6.12")
	if _, err := os.Stat(filepath.Join(dir, FileTracepoints)); err != nil {
		t.Skipf("snapshot %s: %v", dir, err)
	}
	fromDir, err := ReadTracepointDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(fromDir) != len(tps) {
		t.Fatalf("embedded %d tracepoints, snapshot %d", len(tps), len(fromDir))
	}
	for i := range tps {
		if tps[i] != fromDir[i] {
			t.Fatalf("tracepoint %d: embedded %s:%s differs from the snapshot's %s:%s", i, tps[i].System, tps[i].Name, fromDir[i].System, fromDir[i].Name)
		}
	}
}

func BenchmarkFuncsAll(b *testing.B) {
	m, err := Embedded()
	if err != nil {
		b.Fatal(err)
	}
	if _, err := m.Funcs(nil); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		fs, err := m.Funcs(nil)
		if err != nil || len(fs) < 50000 {
			b.Fatal(err, len(fs))
		}
	}
}
