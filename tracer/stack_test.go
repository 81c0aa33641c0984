package tracer

import (
	"encoding/binary"
	"slices"
	"testing"

	"github.com/ktrace-dev/ktrace/kernel"
	"github.com/ktrace-dev/ktrace/trigger"
)

// fakeNames places each function at 0x1000*(i+1), 0x1000 bytes long.
type fakeNames []string

func (n fakeNames) LookupAddr(a uint64) (kernel.Symbol, bool) {
	i := int(a/0x1000) - 1
	if i < 0 || i >= len(n) {
		return kernel.Symbol{}, false
	}
	return kernel.Symbol{Name: n[i], Addr: uint64(i+1) * 0x1000, Size: 0x1000}, true
}

func (n fakeNames) SyscallName(uint64) (string, bool) { return "", false }

func (n fakeNames) at(name string, off uint64) uint64 {
	return uint64(slices.Index(n, name)+1)*0x1000 + off
}

var stackNames = fakeNames{"bpf_prog_1", "bpf_prog_2", "trace_call_bpf", "kprobe_perf_func", "kprobe_ftrace_handler", "ksys_sync", "do_syscall_64", "entry_SYSCALL_64", "f", "perf_syscall_enter"}

// A kprobe's stack as its program sees it: the program, trace_call_bpf,
// kprobe_perf_func, then the frames the kernel's tracer shares.
func kprobeStack(prog string, below ...uint64) []uint64 {
	n := stackNames
	return append([]uint64{n.at(prog, 0x40), n.at("trace_call_bpf", 0x7c), n.at("kprobe_perf_func", 0x10)}, below...)
}

func TestHistStack(t *testing.T) {
	n := stackNames
	shared := []uint64{n.at("kprobe_ftrace_handler", 0x13b), n.at("ksys_sync", 9), n.at("do_syscall_64", 0x87), n.at("entry_SYSCALL_64", 0x76)}
	// The kernel's key leaves out kprobe_trace_func and
	// kprobe_dispatcher (the frames its stacktrace trigger shows first).
	if got := HistStack(kprobeStack("bpf_prog_1", shared...), n); !slices.Equal(got, shared) {
		t.Errorf("kprobe key %#x, want %#x", got, shared)
	}
	// 20 frames below the tracer's: the key keeps 16.
	var deep []uint64
	for i := range 20 {
		deep = append(deep, n.at("f", uint64(i)))
	}
	if got := HistStack(kprobeStack("bpf_prog_1", deep...), n); !slices.Equal(got, deep[:HistStackDepth]) {
		t.Errorf("deep key %#x, want the first %d of %#x", got, HistStackDepth, deep)
	}
	// A static event's program unwinds from its context: no BPF frames,
	// the first one the caller of the tracer's function, which the
	// kernel's key leaves out too.
	tp := append([]uint64{n.at("ksys_sync", 0x20)}, shared[2:]...)
	if got := HistStack(tp, n); !slices.Equal(got, shared[2:]) {
		t.Errorf("tracepoint key %#x, want %#x", got, shared[2:])
	}
	// 6.12's system call events unwind from the perf function, which
	// stands for the tracer's.
	sc := append([]uint64{n.at("perf_syscall_enter", 0x30)}, tp...)
	if got := HistStack(sc, n); !slices.Equal(got, shared[2:]) {
		t.Errorf("system call key %#x, want %#x", got, shared[2:])
	}
}

// Keys that differ in the BPF path's frames, or past the kernel's depth,
// are one entry of the kernel's table, their sums added; the fields
// after the stack move back to their place in the kernel's key.
func TestStackKernelKeys(t *testing.T) {
	n := stackNames
	slot := &stackSlot{at: 0, size: 8 * HistStackDepth}
	raw := 8 * HistStackRaw
	key := func(pid uint32, pcs []uint64) []byte {
		k := make([]byte, raw+8)
		for i, pc := range pcs {
			binary.LittleEndian.PutUint64(k[8*i:], pc)
		}
		binary.LittleEndian.PutUint32(k[raw:], pid)
		return k
	}
	var deep []uint64
	for i := range 20 {
		deep = append(deep, n.at("f", uint64(i)))
	}
	deep2 := append(slices.Clone(deep[:HistStackDepth]), n.at("f", 0x99))
	entries := []trigger.Entry{
		{Key: key(7, kprobeStack("bpf_prog_1", deep...)), Sums: []uint64{2, 20}, Comm: "a"},
		{Key: key(7, kprobeStack("bpf_prog_2", deep...)), Sums: []uint64{1, 10}, Comm: "b"},
		{Key: key(7, kprobeStack("bpf_prog_1", deep2...)), Sums: []uint64{4, 40}, Comm: "c"},
		{Key: key(8, kprobeStack("bpf_prog_1", deep...)), Sums: []uint64{1, 1}, Comm: "d"},
	}
	got := slot.kernelKeys(entries, n)
	if len(got) != 2 {
		t.Fatalf("%d entries, want 2 (pid 7, pid 8)", len(got))
	}
	for _, e := range got {
		if len(e.Key) != 8*HistStackDepth+8 {
			t.Fatalf("key of %d bytes, want %d", len(e.Key), 8*HistStackDepth+8)
		}
		for i := range HistStackDepth {
			if pc := binary.LittleEndian.Uint64(e.Key[8*i:]); pc != deep[i] {
				t.Errorf("frame %d: %#x, want %#x", i, pc, deep[i])
			}
		}
	}
	if pid := binary.LittleEndian.Uint32(got[0].Key[8*HistStackDepth:]); pid != 7 || !slices.Equal(got[0].Sums, []uint64{7, 70}) || got[0].Comm != "a" {
		t.Errorf("first entry: pid %d, sums %v, comm %q; want 7, [7 70], a", pid, got[0].Sums, got[0].Comm)
	}
	if pid := binary.LittleEndian.Uint32(got[1].Key[8*HistStackDepth:]); pid != 8 || !slices.Equal(got[1].Sums, []uint64{1, 1}) {
		t.Errorf("second entry: pid %d, sums %v; want 8, [1 1]", pid, got[1].Sums)
	}
}
