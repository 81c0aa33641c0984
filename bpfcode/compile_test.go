package bpfcode

import (
	"errors"
	"strings"
	"testing"

	"github.com/cilium/ebpf/asm"

	"github.com/ktrace-dev/ktrace/events"
	"github.com/ktrace-dev/ktrace/fetchargs"
	"github.com/ktrace-dev/ktrace/grammar"
	"github.com/ktrace-dev/ktrace/internal/vmtest"
	"github.com/ktrace-dev/ktrace/kernel"
)

// fakeMap stands in for a map file descriptor when only the instructions
// are inspected.
type fakeMap int

func (f fakeMap) FD() int { return int(f) }

func testMaps() *Maps {
	return &Maps{Ring: fakeMap(3), Scratch: fakeMap(4), Counters: fakeMap(5), EntryDepth: fakeMap(6), EntryData: fakeMap(7), Probes: fakeMap(8), Follow: fakeMap(9)}
}

// lineResult holds the arguments of one probe line.
type lineResult struct{ args []*fetchargs.Arg }

// runLine defines line ("p PLACE ARGS", "r PLACE ARGS") as event ev in a
// fresh registry of m, with the newest syntax, and returns its arguments
// as the registry armed them.
func runLine(t *testing.T, m *kernel.Model, line string) lineResult {
	t.Helper()
	r := events.NewRegistry(m, grammar.Latest)
	def := line[:1] + ":ev" + line[1:]
	if err := r.Exec(events.KprobeEvents, def); err != nil {
		t.Fatalf("%s: %v", def, err)
	}
	evs := r.Events()
	if len(evs) != 1 {
		t.Fatalf("%s: %d events", def, len(evs))
	}
	return lineResult{args: evs[0].Args}
}

// calls lists the helper calls of a program in order.
func calls(ins asm.Instructions) []string {
	var out []string
	for _, in := range ins {
		if in.IsBuiltinCall() {
			out = append(out, asm.BuiltinFunc(in.Constant).String())
		}
	}
	return out
}

func count(s []string, x string) int {
	n := 0
	for _, v := range s {
		if v == x {
			n++
		}
	}
	return n
}

// TestCompileShapes checks which helpers each kind of fetch uses: kernel
// reads dispatch to the user helper below TASK_SIZE on x86_64, +u reads
// and ustring always use the user helpers, $comm copies the header's comm,
// and a return probe with $argN reads entry data from the maps.
func TestCompileShapes(t *testing.T) {
	m := vmtest.Model(t, "6.12")
	tests := []struct {
		line string
		want map[string]int // helper -> calls in the whole program (the header reads comm once)
	}{
		{"p vfs_read %di:u32", map[string]int{"FnProbeReadKernel": 0, "FnProbeReadUser": 0, "FnGetCurrentComm": 1}},
		{"p vfs_read +0(%di):u32", map[string]int{"FnProbeReadKernel": 1, "FnProbeReadUser": 1}},
		{"p vfs_read +u0(%di):u32", map[string]int{"FnProbeReadKernel": 0, "FnProbeReadUser": 1}},
		{"p vfs_read +0(%di):ustring", map[string]int{"FnProbeReadUserStr": 1, "FnProbeReadKernelStr": 0}},
		{"p vfs_read +0(+8(%di)):string", map[string]int{"FnProbeReadKernelStr": 1, "FnProbeReadUserStr": 1, "FnProbeReadKernel": 1}},
		{"p vfs_read $comm", map[string]int{"FnGetCurrentComm": 1, "FnProbeReadKernelStr": 1}},
		{"p vfs_read $stack2", map[string]int{"FnProbeReadKernel": 1}},
		{"p vfs_read x=$arg8", map[string]int{"FnProbeReadKernel": 1}},
		{"r vfs_read $arg2", map[string]int{"FnMapDeleteElem": 1}},
	}
	for _, tc := range tests {
		t.Run(tc.line, func(t *testing.T) {
			res := runLine(t, m, tc.line)

			l, err := fetchargs.NewLayout(res.args, tc.line[0] == 'r')
			if err != nil {
				t.Fatal(err)
			}
			p := &ProbeProgram{Arch: m.Arch(), EventID: 1554, Return: tc.line[0] == 'r', IP: 0xffffffff81000000, Args: res.args, Layout: l, EntryDataSize: 8 * len(l.EntrySlots)}
			ins, err := Compile(p, testMaps())
			if err != nil {
				t.Fatal(err)
			}
			got := calls(ins)
			for fn, n := range tc.want {
				if c := count(got, fn); c != n {
					t.Errorf("%s: %d calls, want %d (calls %v)", fn, c, n, got)
				}
			}
			ent, err := CompileEntry(p, testMaps())
			if err != nil {
				t.Fatal(err)
			}
			if (ent != nil) != (len(l.EntrySlots) > 0) {
				t.Errorf("entry program %v, entry slots %v", ent != nil, l.EntrySlots)
			}
		})
	}
}

// TestCompileErrors checks refusals: unresolved @SYM, missing layout,
// uprobe-only fetches.
func TestCompileErrors(t *testing.T) {
	m := vmtest.Model(t, "6.12")
	res := runLine(t, m, "p vfs_read @jiffies")

	a := *res.args[0]
	a.Ops = append([]fetchargs.Op(nil), a.Ops...)
	for i := range a.Ops {
		if a.Ops[i].Code == fetchargs.OpImm {
			a.Ops[i].Imm = 0
		}
	}
	l, _ := fetchargs.NewLayout([]*fetchargs.Arg{&a}, false)
	p := &ProbeProgram{Arch: m.Arch(), Args: []*fetchargs.Arg{&a}, Layout: l}
	if _, err := Compile(p, testMaps()); err == nil || !strings.Contains(err.Error(), "unresolved symbol") {
		t.Errorf("unresolved @SYM: %v", err)
	}
	foffs := &fetchargs.Arg{Name: "x", Body: "@+4", Type: fetchargs.LookupType("u64"), Size: 8, Ops: []fetchargs.Op{{Code: fetchargs.OpFOffs, Imm: 4}, {Code: fetchargs.OpStRaw, Size: 8}, {Code: fetchargs.OpEnd}}}
	l, _ = fetchargs.NewLayout([]*fetchargs.Arg{foffs}, false)
	p = &ProbeProgram{Arch: m.Arch(), Args: []*fetchargs.Arg{foffs}, Layout: l}
	if _, err := Compile(p, testMaps()); !errors.Is(err, ErrUnsupported) {
		t.Errorf("FOFFS: %v, want ErrUnsupported", err)
	}
	if _, err := Compile(&ProbeProgram{Arch: m.Arch()}, testMaps()); err == nil {
		t.Error("probe without layout compiled")
	}
}
