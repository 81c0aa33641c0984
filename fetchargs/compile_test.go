package fetchargs

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/cilium/ebpf/asm"
)

// fakeMap stands in for a map file descriptor when only the instructions
// are inspected.
type fakeMap int

func (f fakeMap) FD() int { return int(f) }

func testMaps() *Maps {
	return &Maps{Ring: fakeMap(3), Scratch: fakeMap(4), Counters: fakeMap(5), EntryDepth: fakeMap(6), EntryData: fakeMap(7)}
}

// TestLayout checks record layouts against the format files' rules: args
// packed without alignment from offset 16 (24 for return probes), string
// fields 4-byte __data_loc words, arrays element size times count.
func TestLayout(t *testing.T) {
	m := loadModel(t, "6.12")
	tests := []struct {
		line    string
		offsets []int
		fixed   int
		strings int
		slot    int
		entry   []int
	}{
		{"p vfs_read a=%di:u8 b=%si:u64 c=+0(%dx):string", []int{16, 17, 25}, 29, 1, 4096, nil},
		{"r vfs_read $retval", []int{24}, 32, 0, 4096, nil},
		{"r vfs_read count=$arg3:u32 buf=+0($arg2):string", []int{24, 28}, 32, 1, 4096, []int{2, 1}},
		{"p vfs_read a=+0(%di):u16[4] s=+0(%si):string[8]", []int{16, 24}, 56, 8, 3072, nil},
		{"p vfs_read $comm \\\"x\" y=%ax:symstr", []int{16, 20, 24}, 28, 3, 4096, nil},
	}
	for _, tc := range tests {
		t.Run(tc.line, func(t *testing.T) {
			res := runLine(m, tc.line)
			if res.err != nil {
				t.Fatal(res.err)
			}
			l, err := NewLayout(res.args, tc.line[0] == 'r')
			if err != nil {
				t.Fatal(err)
			}
			if fmtInts(l.Offsets) != fmtInts(tc.offsets) {
				t.Errorf("offsets %v, want %v", l.Offsets, tc.offsets)
			}
			if l.Fixed != tc.fixed || l.Strings != tc.strings || l.StrSlot != tc.slot {
				t.Errorf("fixed %d strings %d slot %d, want %d %d %d", l.Fixed, l.Strings, l.StrSlot, tc.fixed, tc.strings, tc.slot)
			}
			if fmtInts(l.EntrySlots) != fmtInts(tc.entry) {
				t.Errorf("entry slots %v, want %v", l.EntrySlots, tc.entry)
			}
			if l.ScratchSize() > 1<<15-1 {
				t.Errorf("scratch %d exceeds 16-bit offsets", l.ScratchSize())
			}
		})
	}
}

func fmtInts(v []int) string { return fmt.Sprint(v) }

// TestLayoutManyStrings checks that probes with many strings get shorter
// slots that keep every scratch offset within an instruction's 16 bits.
func TestLayoutManyStrings(t *testing.T) {
	m := loadModel(t, "6.12")
	line := "p vfs_read"
	for i := 0; i < 12; i++ {
		line += " +0(%di):string[64]"
	}
	res := runLine(m, line)
	if res.err != nil {
		t.Fatal(res.err)
	}
	l, err := NewLayout(res.args, false)
	if err != nil {
		t.Fatal(err)
	}
	if l.Strings != 768 || l.StrSlot != 32 {
		t.Errorf("strings %d slot %d, want 768 and 32", l.Strings, l.StrSlot)
	}
	if l.ScratchSize() > 1<<15-1 {
		t.Errorf("scratch %d exceeds 16-bit offsets", l.ScratchSize())
	}
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
// and ustring always use the user helpers, $comm reads the task's comm,
// and a return probe with $argN reads entry data from the maps.
func TestCompileShapes(t *testing.T) {
	m := loadModel(t, "6.12")
	tests := []struct {
		line string
		want map[string]int // helper -> calls in the whole program (the header reads comm once)
	}{
		{"p vfs_read %di:u32", map[string]int{"FnProbeReadKernel": 0, "FnProbeReadUser": 0, "FnGetCurrentComm": 1}},
		{"p vfs_read +0(%di):u32", map[string]int{"FnProbeReadKernel": 1, "FnProbeReadUser": 1}},
		{"p vfs_read +u0(%di):u32", map[string]int{"FnProbeReadKernel": 0, "FnProbeReadUser": 1}},
		{"p vfs_read +0(%di):ustring", map[string]int{"FnProbeReadUserStr": 1, "FnProbeReadKernelStr": 0}},
		{"p vfs_read +0(+8(%di)):string", map[string]int{"FnProbeReadKernelStr": 1, "FnProbeReadUserStr": 1, "FnProbeReadKernel": 1}},
		{"p vfs_read $comm", map[string]int{"FnGetCurrentComm": 2, "FnProbeReadKernelStr": 1}},
		{"p vfs_read $stack2", map[string]int{"FnProbeReadKernel": 1}},
		{"p vfs_read x=$arg8", map[string]int{"FnProbeReadKernel": 1}},
		{"r vfs_read $arg2", map[string]int{"FnMapDeleteElem": 1}},
	}
	for _, tc := range tests {
		t.Run(tc.line, func(t *testing.T) {
			res := runLine(m, tc.line)
			if res.err != nil {
				t.Fatal(res.err)
			}
			l, err := NewLayout(res.args, tc.line[0] == 'r')
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
	m := loadModel(t, "6.12")
	res := runLine(m, "p vfs_read @jiffies")
	if res.err != nil {
		t.Fatal(res.err)
	}
	a := *res.args[0]
	a.Ops = append([]Op(nil), a.Ops...)
	for i := range a.Ops {
		if a.Ops[i].Code == OpImm {
			a.Ops[i].Imm = 0
		}
	}
	l, _ := NewLayout([]*Arg{&a}, false)
	p := &ProbeProgram{Arch: m.Arch(), Args: []*Arg{&a}, Layout: l}
	if _, err := Compile(p, testMaps()); err == nil || !strings.Contains(err.Error(), "unresolved symbol") {
		t.Errorf("unresolved @SYM: %v", err)
	}
	foffs := &Arg{Name: "x", Body: "@+4", Type: LookupType("u64"), Size: 8, Ops: []Op{{Code: OpFOffs, Imm: 4}, {Code: OpStRaw, Size: 8}, {Code: OpEnd}}}
	l, _ = NewLayout([]*Arg{foffs}, false)
	p = &ProbeProgram{Arch: m.Arch(), Args: []*Arg{foffs}, Layout: l}
	if _, err := Compile(p, testMaps()); !errors.Is(err, ErrUnsupported) {
		t.Errorf("FOFFS: %v, want ErrUnsupported", err)
	}
	if _, err := Compile(&ProbeProgram{Arch: m.Arch()}, testMaps()); err == nil {
		t.Error("probe without layout compiled")
	}
}
