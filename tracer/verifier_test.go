package tracer

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/rlimit"

	"github.com/ktrace-dev/ktrace/bpfcode"
	"github.com/ktrace-dev/ktrace/events"
	"github.com/ktrace-dev/ktrace/grammar"
	"github.com/ktrace-dev/ktrace/internal/vmtest"
	"github.com/ktrace-dev/ktrace/kernel"
)

// hostLoadsKprobePrograms reports whether this machine's kernel can create
// a ring buffer and load a trivial BPF_PROG_TYPE_KPROBE program (root,
// bpf(2) available). Nothing is attached.
func hostLoadsKprobePrograms() error {
	if err := rlimit.RemoveMemlock(); err != nil {
		return err
	}
	m, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.RingBuf, MaxEntries: 4096})
	if err != nil {
		return err
	}
	m.Close()
	p, err := ebpf.NewProgram(progSpec("ktrace_probe", trivialProgram()))
	if err != nil {
		return err
	}
	return p.Close()
}

// requireHostBPF skips when the host cannot load kprobe programs; under
// CI=true that is still a skip, since the test is about the compiler, not
// the machine (the VM tests cover the pinned kernels).
func requireHostBPF(t *testing.T) {
	t.Helper()
	if err := hostLoadsKprobePrograms(); err != nil {
		t.Skipf("this host cannot load BPF_PROG_TYPE_KPROBE programs (needs root or CAP_BPF+CAP_PERFMON and bpf(2)): %v", err)
	}
}

type golden struct {
	Corpus string   `json:"corpus"`
	Index  int      `json:"index"`
	Line   string   `json:"line"`
	Setup  []string `json:"setup"`
	File   string   `json:"file"`
	OK     bool     `json:"ok"`
}

func readGoldens(t testing.TB, kernelName string) []golden {
	path := "../testdata/conformance/golden-" + kernelName + ".jsonl"
	if p := os.Getenv("KTRACE_VERIFIER_GOLDENS"); p != "" {
		path = p
	}
	f, err := os.Open(path)
	if err != nil {
		t.Skipf("no goldens: %v", err)
	}
	defer f.Close()
	var out []golden
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<22), 1<<22)
	for sc.Scan() {
		var g golden
		if err := json.Unmarshal(sc.Bytes(), &g); err != nil {
			t.Fatalf("golden: %v", err)
		}
		if _, ok := events.FileNamed(g.File); !ok && g.File != "" {
			// A write to an events/ file (a filter, a trigger): no
			// probe line; its setup lines are other corpora's.
			continue
		}
		out = append(out, g)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// fileOf is the control file a case names (kprobe_events when none).
func fileOf(name string) events.File {
	if f, ok := events.FileNamed(name); ok {
		return f
	}
	return events.KprobeEvents
}

// replay builds the registry a golden's write leaves behind: setup lines
// (each its own write) and the line itself.
func replay(m *kernel.Model, d *grammar.Dialect, g golden) (*events.Registry, error) {
	r := events.NewRegistry(m, d)
	f := fileOf(g.File)
	for _, s := range g.Setup {
		sf := f
		// A "FILE:" prefix names the control file of a setup line.
		if name, rest, ok := strings.Cut(s, ":"); ok {
			if pf, named := events.FileNamed(name); named {
				sf, s = pf, rest
			}
		}
		r.Write(sf, []byte(s+"\n"))
	}
	_, err := r.Write(f, []byte(g.Line+"\n"))
	return r, err
}

// TestVerifierAcceptsCorpus compiles every probe that a valid line of the
// conformance corpora leaves registered on the 6.12 model (the goldens say
// which lines the kernel accepted) and loads the programs into this host's
// kernel: its verifier must accept each. Nothing is attached.
//
// Inside the VM (TestVerifierVM) the same test runs against the booted
// kernel: KTRACE_VERIFIER_KERNEL names the pinned kernel whose goldens and
// dialect to use, KTRACE_VERIFIER_GOLDENS the golden file and
// KTRACE_VERIFIER_MODEL=host takes the model from the running kernel.
func TestVerifierAcceptsCorpus(t *testing.T) {
	requireHostBPF(t)
	name := "6.12"
	if v := os.Getenv("KTRACE_VERIFIER_KERNEL"); v != "" {
		name = v
	}
	var m *kernel.Model
	if os.Getenv("KTRACE_VERIFIER_MODEL") == "host" {
		var err error
		if m, err = kernel.LoadHost(); err != nil {
			t.Fatal(err)
		}
	} else {
		m = vmtest.Model(t, name)
	}
	major, minor, _ := m.KernelVersion()
	d := grammar.DialectFor(major, minor)
	// KTRACE_VERIFIER_SYNTAX=latest replays another kernel's goldens with
	// the newest syntax on this model (ktrace bringing 6.12 syntax to 6.1):
	// lines this model refuses (other symbols, other BTF) are counted, not
	// failed.
	latest := os.Getenv("KTRACE_VERIFIER_SYNTAX") == "latest"
	if latest {
		d = grammar.Latest
	}
	known := knownDifferences(t)
	seen := map[string]bool{}
	var loaded, entries, skipped, untraced, refused int
	for _, g := range readGoldens(t, name) {
		if !g.OK {
			continue
		}
		reg, err := replay(m, d, g)
		if err != nil && latest {
			refused++
			continue
		}
		if err != nil && known[fmt.Sprintf("%s\t%s:%d", name, g.Corpus, g.Index)] {
			// A listed difference of the model (known-differences.txt).
			refused++
			continue
		}
		if err != nil {
			t.Errorf("%s#%d %q: the %s model rejects a line the kernel accepted: %v", g.Corpus, g.Index, g.Line, name, err)
			continue
		}
		var evs []*events.Event
		for _, ev := range reg.Events() {
			switch ev.Kind {
			case events.Synthetic:
				// A synthetic event has no probe of its own.
				untraced++
				continue
			case events.Eprobe:
				if _, err := NewPlan([]*events.Event{ev}, PlanOptions{RingSize: 1 << 16}); errors.Is(err, syscall.EOPNOTSUPP) {
					// Event probes on synthetic events, or with a
					// filter the program cannot run, are emulated
					// only.
					untraced++
					continue
				}
			}
			var live []*events.Probe
			for _, p := range ev.Probes {
				if p.Pending {
					skipped++
					continue
				}
				if seen[p.Line] {
					continue
				}
				seen[p.Line] = true
				live = append(live, p)
			}
			if len(live) > 0 {
				c := *ev
				c.Probes = live
				evs = append(evs, &c)
			}
		}
		if len(evs) == 0 {
			continue
		}
		n, e, err := loadAll(m, evs)
		loaded += n
		entries += e
		if err != nil && g.Corpus == "eprobe.jsonl" && errors.Is(err, bpfcode.ErrUnsupported) {
			// $comm and immediate strings typed as numbers: on an event
			// probe the kernel prints their kernel addresses, which
			// ktrace cannot know; such lines are refused.
			untraced++
			continue
		}
		if err != nil {
			t.Errorf("%s#%d %q: %v", g.Corpus, g.Index, g.Line, err)
		}
	}
	t.Logf("verifier of %s accepted %d probe programs (+%d entry programs); %d pending probes not compiled; %d events of kinds the tracer does not run (synthetic; event probes on synthetic events or with a filter the program cannot run); %d lines refused by the model", kernelRelease(), loaded, entries, skipped, untraced, refused)
	if loaded == 0 {
		t.Fatal("no programs loaded")
	}
}

func kernelRelease() string {
	b, err := os.ReadFile("/proc/sys/kernel/osrelease")
	if err != nil {
		return "this host"
	}
	return "host " + strings.TrimSpace(string(b))
}

// loadAll compiles and loads (without attaching) every probe of evs.
func loadAll(m *kernel.Model, evs []*events.Event) (progs, entries int, err error) {
	// As ktrace record compiles them: with its own hits filtered out, and
	// fprobes sharing programs through kprobe-multi links where the
	// kernel has them.
	plan, err := NewPlan(evs, PlanOptions{RingSize: 1 << 16, IgnoreTgid: uint32(os.Getpid()), Multi: m.Config("CONFIG_FPROBE") == "y"})
	if err != nil {
		return 0, 0, err
	}
	maps, err := NewMaps(plan)
	if err != nil {
		return 0, 0, err
	}
	defer maps.Close()
	if staticEventProbes(plan) {
		// As a session gives them (attachIrqState), unattached.
		if maps.IrqState, err = ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.PerCPUArray, KeySize: 4, ValueSize: bpfcode.IrqStateValueSize, MaxEntries: bpfcode.IrqStateSlots}); err != nil {
			return 0, 0, err
		}
	}
	if err := plan.Compile(m, maps.Compiler()); err != nil {
		return 0, 0, err
	}
	for _, pr := range plan.Probes {
		for _, spec := range []*ebpf.ProgramSpec{pr.Main, pr.Entry, pr.Shared} {
			if spec == nil {
				continue
			}
			if spec == pr.Shared {
				spec = spec.Copy()
				spec.AttachType = ebpf.AttachTraceKprobeMulti
			}
			p, err := ebpf.NewProgramWithOptions(spec, ebpf.ProgramOptions{LogSizeStart: 1 << 20})
			if err != nil {
				var ve *ebpf.VerifierError
				if errors.As(err, &ve) {
					return progs, entries, &verifierErr{probe: pr.Probe.Line, err: ve}
				}
				return progs, entries, err
			}
			p.Close()
			if spec != pr.Entry {
				progs++
			} else {
				entries++
			}
		}
	}
	return progs, entries, nil
}

type verifierErr struct {
	probe string
	err   *ebpf.VerifierError
}

func (e *verifierErr) Error() string {
	log := e.err.Log
	if len(log) > 12 {
		log = log[len(log)-12:]
	}
	return "verifier rejected " + e.probe + ": " + e.err.Cause.Error() + "\n" + strings.Join(log, "\n")
}

// knownDifferences reads testdata/conformance/known-differences.txt: the
// "kernel<TAB>corpus:index" keys of the cases where the snapshot models
// knowingly disagree with the kernel. Inside a VM guest (no source tree)
// the test replays with the running kernel's own model, which these
// differences are not about: the set is empty there.
func knownDifferences(t *testing.T) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	root, err := vmtest.ModuleRoot()
	if err != nil {
		return out
	}
	b, err := os.ReadFile(filepath.Join(root, "testdata", "conformance", "known-differences.txt"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.SplitN(line, "\t", 3)
		if len(f) >= 2 {
			out[f[0]+"\t"+f[1]] = true
		}
	}
	return out
}

// TestEprobeFilterVerifier compiles event probes with "if" filters of
// every kind the program runs (numbers of each size and sign, comm, the
// common fields it rebuilds and the tracepoint's context, CPU, char arrays, __data_loc strings, glob
// prefixes and suffixes, .function, && || !) on the 6.12 model and loads
// them into this host's kernel, and checks that the filters the program
// cannot run are refused before anything is built.
func TestEprobeFilterVerifier(t *testing.T) {
	requireHostBPF(t)
	m := vmtest.Model(t, "6.12")
	d := grammar.DialectFor(6, 12)
	run := []string{
		`e:ep/a sched.sched_switch prev=$prev_comm:string if prev_pid > 0 && prev_prio < 120 || next_comm == "swapper/0"`,
		`e:ep/b sched.sched_switch if prev_comm ~ "kworker*" && !(next_comm ~ "*d") && prev_state & 2`,
		`e:ep/c syscalls.sys_exit_read ret=$ret if ret >= 0 && common_pid != 1 && comm == "workload"`,
		`e:ep/d sched.sched_process_exec fn=$filename:string if filename == "/bin/workload" && CPU == 0`,
		`e:ep/e kmem.kfree if call_site.function == kfree_rcu_work || common_type == 1`,
		`e:ep/f sched.sched_process_exec if filename ~ "/bin/*"`,
		`e:ep/h sched.sched_switch if prev_comm ~ "k*r" || next_comm ~ "[a-c]?[!x]*"`,
		`e:ep/i sched.sched_process_exec if filename ~ "/b?n/*[ab]*"`,
		`e:ep/j sched.sched_process_exec if filename ~ "*bin*" && !(filename ~ "*/[s]*")`,
		`e:ep/k sched.sched_switch if prev_comm ~ "*" && next_comm ~ "**"`,
		`e:ep/g sched.sched_switch if common_preempt_count == 2 && common_flags & 1`,
	}
	refused := []string{
		// A glob of more positions than the program follows.
		`e:ep/l sched.sched_process_exec if filename ~ "` + strings.Repeat("?", 70) + `"`,
	}
	build := func(line string) []*events.Event {
		t.Helper()
		r := events.NewRegistry(m, d)
		if _, err := r.Write(events.DynamicEvents, []byte(line+"\n")); err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		evs := r.Events()
		if len(evs) != 1 || evs[0].Attached == nil || evs[0].Attached.FilterProg == nil || evs[0].Attached.ID == 0 {
			t.Fatalf("%s: want one event probe with a compiled filter and the attached ID, have %+v", line, evs)
		}
		return evs
	}
	for _, line := range run {
		n, _, err := loadAll(m, build(line))
		if err != nil || n != 1 {
			t.Errorf("%s: %d programs loaded: %v", line, n, err)
		}
	}
	for _, line := range refused {
		_, err := NewPlan(build(line), PlanOptions{RingSize: 1 << 16})
		if !errors.Is(err, bpfcode.ErrFilterUnsupported) {
			t.Errorf("%s: want the filter refused, have %v", line, err)
		}
	}
}

// TestEprobeOnDynamicEventVerifier compiles event probes on fprobe, fexit
// and tracepoint probe events (the programs build the source's record,
// strings included, then read $FIELD from it, with and without "if"
// filters, and on an fexit whose arguments are saved at entry with its
// entry program) on the 6.12 model and loads them into this host's kernel.
func TestEprobeOnDynamicEventVerifier(t *testing.T) {
	requireHostBPF(t)
	m := vmtest.Model(t, "6.12")
	r := events.NewRegistry(m, grammar.DialectFor(6, 12))
	lines := []string{
		`f:fp/fop do_sys_openat2 dfd=$arg1 fn=+0($arg2):ustring fl=+8($arg3):x64`,
		`f:fp/frd vfs_read%return ret=$retval`,
		`t:tp/tex sched_process_exec p=$arg1 pid=$arg2`,
		`f:fp/fwr vfs_write%return cnt=$arg3 ret=$retval`,
		`e:ep/a fp.fop d=$dfd f=$fn:string l=$fl if dfd != 0 && fn ~ "/etc/*"`,
		`e:ep/b fp/frd r=$ret:s32 ip=$__probe_func if ret > 0`,
		`e:ep/c tp.tex p=$p:x64 pid=$pid`,
		`e:ep/d fp.fwr c=$cnt`,
	}
	for _, line := range lines {
		if _, err := r.Write(events.DynamicEvents, []byte(line+"\n")); err != nil {
			t.Fatalf("%s: %v", line, err)
		}
	}
	byName := map[string]*events.Event{}
	for _, ev := range r.Events() {
		byName[ev.Name] = ev
	}
	for _, name := range []string{"a", "b", "c"} {
		n, _, err := loadAll(m, []*events.Event{byName[name]})
		if err != nil || n != 1 {
			t.Errorf("ep/%s: %d programs loaded: %v", name, n, err)
		}
	}
	// On an fexit whose arguments are saved at entry: its own entry
	// program too.
	if n, e, err := loadAll(m, []*events.Event{byName["d"]}); err != nil || n != 1 || e != 1 {
		t.Errorf("ep/d: %d programs and %d entry programs loaded: %v", n, e, err)
	}
}

// TestStaticContextVerifier loads into this host's kernel the programs
// that give static events' records their context, on each pinned
// kernel's model: the kprobe that takes the interrupt flag at
// perf_trace_run_bpf_submit, and the static events' tracepoint programs
// (the plain copy and the one with histograms) reading the CPU's preempt
// count and that flag, with and without tracing_gen_ctx_dec's decrement.
// Nothing is attached.
func TestStaticContextVerifier(t *testing.T) {
	requireHostBPF(t)
	for _, name := range []string{"6.1", "6.12"} {
		t.Run(name, func(t *testing.T) {
			m := vmtest.Model(t, name)
			pc, err := m.PreemptCount()
			if err != nil {
				t.Fatal(err)
			}
			newMap := func(spec *ebpf.MapSpec) *ebpf.Map {
				t.Helper()
				mp, err := ebpf.NewMap(spec)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { mp.Close() })
				return mp
			}
			ring := newMap(&ebpf.MapSpec{Type: ebpf.RingBuf, MaxEntries: 1 << 16})
			tracing := newMap(&ebpf.MapSpec{Type: ebpf.Array, KeySize: 4, ValueSize: 4, MaxEntries: 1})
			slots := newMap(&ebpf.MapSpec{Type: ebpf.PerCPUArray, KeySize: 4, ValueSize: bpfcode.IrqStateValueSize, MaxEntries: bpfcode.IrqStateSlots})
			load := func(what string, typ ebpf.ProgramType, ins asm.Instructions, err error) {
				t.Helper()
				if err != nil {
					t.Fatalf("%s: %v", what, err)
				}
				p, err := ebpf.NewProgramWithOptions(&ebpf.ProgramSpec{Name: "ktrace_test", Type: typ, License: "GPL", Instructions: ins}, ebpf.ProgramOptions{LogSizeStart: 1 << 20})
				if err != nil {
					t.Fatalf("%s: the verifier refused it: %v", what, err)
				}
				p.Close()
			}
			ins, err := bpfcode.IrqStateProgram(m.Arch(), slots)
			load("interrupt flag kprobe", ebpf.Kprobe, ins, err)
			for _, dec := range []bool{false, true} {
				c := &bpfcode.CPUContext{PerCPUOffsets: pc.PerCPUOffsets, Offset: pc.Offset, Dec: dec, IrqState: slots}
				ins, err := bpfcode.CompileStaticCopy(&bpfcode.StaticCopy{Ring: ring, TracingOn: tracing, Size: 64, IgnoreTgid: 1, Flags: 1, Context: c, Arch: m.Arch()})
				load(fmt.Sprintf("static copy (dec %v)", dec), ebpf.TracePoint, ins, err)
				scratch := newMap(&ebpf.MapSpec{Type: ebpf.Array, KeySize: 4, ValueSize: uint32(bpfcode.HistScratch(64)), MaxEntries: 64})
				sw := newMap(&ebpf.MapSpec{Type: ebpf.Array, KeySize: 4, ValueSize: 4, MaxEntries: 1})
				ins, err = bpfcode.CompileTracepointHist(&bpfcode.TracepointHist{Size: 64, Type: 300, IgnoreTgid: 1, Scratch: scratch, ScratchSize: bpfcode.HistScratch(64),
					TracingOn: tracing, Ring: ring, Switch: sw, Num: 1, Context: c})
				load(fmt.Sprintf("static event with triggers (dec %v)", dec), ebpf.TracePoint, ins, err)
			}
			// Without the interrupt flag's map, and without a context.
			ins, err = bpfcode.CompileStaticCopy(&bpfcode.StaticCopy{Ring: ring, Size: 64, IgnoreTgid: 1, Context: &bpfcode.CPUContext{PerCPUOffsets: pc.PerCPUOffsets, Offset: pc.Offset}, Arch: m.Arch()})
			load("static copy without the interrupt flag", ebpf.TracePoint, ins, err)
			ins, err = bpfcode.CompileStaticCopy(&bpfcode.StaticCopy{Ring: ring, Size: 64, IgnoreTgid: 1, Arch: m.Arch()})
			load("static copy without context", ebpf.TracePoint, ins, err)
		})
	}
}
