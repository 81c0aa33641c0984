package live

import (
	"encoding/binary"
	"strings"
	"testing"

	"github.com/ktrace-dev/ktrace/bpfcode"
	"github.com/ktrace-dev/ktrace/kernel"
)

// options is a set of trace options for the formatting tests.
type options map[string]bool

func (o options) OptionOn(name string) bool { return o[name] }

// TestFuncEntryText formats function entries as the pinned 6.12 kernel
// printed kernel_clone called from __do_sys_clone (testdata/functrace,
// the trace options section): the ftrace location is kernel_clone+0x4,
// the return address __do_sys_clone+0x66.
func TestFuncEntryText(t *testing.T) {
	m, err := kernel.Embedded()
	if err != nil {
		t.Fatal(err)
	}
	var loc, parent uint64
	for _, r := range m.FtraceRecords() {
		if r.Name == "kernel_clone" {
			loc = r.Loc
		}
	}
	if s := m.Symbols("", "__do_sys_clone"); len(s) == 1 {
		parent = s[0].Addr + 0x66
	}
	if loc == 0 || parent == 0 {
		t.Fatal("kernel_clone or __do_sys_clone missing from the model")
	}
	rec := make([]byte, funcRecord)
	binary.LittleEndian.PutUint64(rec[0:], loc)
	binary.LittleEndian.PutUint64(rec[8:], parent)
	for _, c := range []struct {
		opts options
		want string
	}{
		{options{"print-parent": true}, "kernel_clone <-__do_sys_clone"},
		{options{}, "kernel_clone"},
		{options{"print-parent": true, "sym-offset": true}, "kernel_clone+0x4/0x430 <-__do_sys_clone+0x66/0x90"},
		{options{"print-parent": true, "sym-offset": true, "sym-addr": true}, "kernel_clone+0x4/0x430 <ffffffff810c2254> <-__do_sys_clone+0x66/0x90 <ffffffff810c26f6>"},
		{options{"print-parent": true, "sym-addr": true}, "kernel_clone <ffffffff810c2254> <-__do_sys_clone <ffffffff810c26f6>"},
	} {
		b := &Backend{model: m, TraceOptions: c.opts}
		got := string(b.funcEntryText(nil, 0, 22182226000, rec, b.funcOpts()))
		if want := " [000] .....    22.182226: " + c.want; got != want {
			t.Errorf("%v:\n got %q\nwant %q", c.opts, got, want)
		}
	}
}

// TestFuncStack prints a stack the function tracer wrote: the frames of
// the BPF and probe machinery go, the ftrace trampoline is named as 6.12
// names it under func_stack_trace.
func TestFuncStack(t *testing.T) {
	m, err := kernel.Embedded()
	if err != nil {
		t.Fatal(err)
	}
	addr := func(name string, off uint64) uint64 {
		s := m.Symbols("", name)
		if len(s) == 0 {
			t.Fatalf("%s missing from the model", name)
		}
		return s[0].Addr + off
	}
	pcs := []uint64{
		addr("__bpf_get_task_stack", 0x20), 0xffffffffc00007c2,
		addr("kprobe_multi_link_handler", 0x40), addr("fprobe_handler", 0x90),
		0xffffffffc02030de, addr("kernel_clone", 9), addr("__do_sys_clone", 0x66),
		addr("do_syscall_64", 0x82), addr("entry_SYSCALL_64_after_hwframe", 0x76),
	}
	raw := make([]byte, bpfcode.StackRecordSize)
	binary.LittleEndian.PutUint32(raw[12:], uint32(8*len(pcs)))
	for i, pc := range pcs {
		binary.LittleEndian.PutUint64(raw[bpfcode.SynthHeader+8*i:], pc)
	}
	b := &Backend{model: m, TraceOptions: options{}}
	want := "<stack trace>\n => [FTRACE TRAMPOLINE]\n => kernel_clone\n => __do_sys_clone\n => do_syscall_64\n => entry_SYSCALL_64_after_hwframe"
	if got := string(b.appendFuncStack(nil, raw, funcStackNum)); got != want {
		t.Errorf("func_stack_trace:\n%s\nwant\n%s", got, want)
	}
	// A stacktrace command's stack shows the trampoline's address.
	want = "<stack trace>\n => 0xffffffffc02030de\n => kernel_clone\n => __do_sys_clone\n => do_syscall_64\n => entry_SYSCALL_64_after_hwframe"
	if got := string(b.appendFuncStack(nil, raw, probeStackNum)); got != want {
		t.Errorf("stacktrace command:\n%s\nwant\n%s", got, want)
	}
}

// TestFuncNoRepeats counts an entry repeated on a CPU under
// func-no-repeats and prints the count before the next different entry,
// as the 6.12 kernel did: "ksys_write <-do_syscall_64 (repeats: 5,
// last_ts:    22.946168)" (testdata/functrace, func-no-repeats).
func TestFuncNoRepeats(t *testing.T) {
	m, err := kernel.Embedded()
	if err != nil {
		t.Fatal(err)
	}
	at := func(name string, off uint64) uint64 {
		s := m.Symbols("", name)
		if len(s) == 0 {
			t.Fatalf("%s missing from the model", name)
		}
		return s[0].Addr + off
	}
	var got []string
	b := &Backend{model: m, TraceOptions: options{"print-parent": true, "func-no-repeats": true}}
	b.Record = func(ts uint64, pid int, comm string, rest []byte) bool {
		got = append(got, string(rest))
		return true
	}
	entry := func(ip, parent uint64) []byte {
		r := make([]byte, funcRecord)
		binary.LittleEndian.PutUint64(r[0:], ip)
		binary.LittleEndian.PutUint64(r[8:], parent)
		return r
	}
	w := entry(at("ksys_write", 4), at("do_syscall_64", 0x82))
	c := entry(at("kernel_clone", 4), at("__do_sys_clone", 0x66))
	ts := uint64(22946100000)
	for i := 0; i < 6; i++ {
		b.funcEntry(nil, 0, ts, 133, "sh", w)
		ts += 13000
	}
	b.funcEntry(nil, 0, 22946255000, 133, "sh", c)
	b.funcEntry(nil, 0, 22950229000, 133, "sh", w)
	want := []string{
		" [000] .....    22.946100: ksys_write <-do_syscall_64",
		" [000] .....    22.946255: ksys_write <-do_syscall_64 (repeats: 5, last_ts:    22.946165)",
		" [000] .....    22.946255: kernel_clone <-__do_sys_clone",
		" [000] .....    22.950229: ksys_write <-do_syscall_64",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
