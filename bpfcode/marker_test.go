package bpfcode

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/cilium/ebpf/asm"

	"github.com/ktrace-dev/ktrace/filter"
	"github.com/ktrace-dev/ktrace/grammar"
)

// printFormat is events/ftrace/print/format as 6.12 shows it: buf is a
// char array without a size, a string ended by its NUL.
const printFormat = `name: print
ID: 5
format:
	field:unsigned short common_type;	offset:0;	size:2;	signed:0;
	field:unsigned char common_flags;	offset:2;	size:1;	signed:0;
	field:unsigned char common_preempt_count;	offset:3;	size:1;	signed:0;
	field:int common_pid;	offset:4;	size:4;	signed:1;

	field:unsigned long ip;	offset:8;	size:8;	signed:0;
	field:char buf[];	offset:16;	size:0;	signed:0;

print fmt: "%ps: %s", (void *)REC->ip, REC->buf
`

// TestMarkerHistCompile: the trace_marker event's program reads the
// writer's record from its context (bpf_probe_read_user), never the
// running task's pid or comm, and compares buf as a string ended by its
// NUL; a stacktrace trigger (whose stack would be ktrace's) and a record
// of its own are refused.
func TestMarkerHistCompile(t *testing.T) {
	ev, err := filter.FieldsFromFormat(printFormat, true)
	if err != nil {
		t.Fatal(err)
	}
	f, ferr := filter.Parse(`buf == "end" || buf ~ "*nd"`, ev, &filter.Env{Dialect: grammar.Latest, CPUs: 1})
	if ferr != nil {
		t.Fatal(ferr)
	}
	pid := &filter.Field{Name: "common_pid", Class: filter.Numeric, Offset: 4, Size: 4, Signed: true}
	h := &Hist{Map: fakeMap(10), Counts: fakeMap(11), KeySize: 8, Keys: []HistKey{{Field: pid, Size: 8}}, Filter: f}
	const size = 16 + 4096 + 8
	p := &TracepointHist{Size: size, Type: 5, Scratch: fakeMap(4), ScratchSize: HistScratch(size), Hists: []*Hist{h},
		TracingOn: fakeMap(5), Triggers: []*EventTrigger{{Kind: Snapshot, Queue: fakeMap(6)}, {Kind: TraceOff}}}
	ins, err := CompileMarkerHist(p)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := ins.Marshal(&buf, binary.LittleEndian); err != nil {
		t.Fatalf("marshal: %v", err)
	}
	c := calls(ins)
	for _, fn := range []string{"FnGetCurrentPidTgid", "FnGetCurrentComm", "FnKtimeGetNs"} {
		if n := count(c, fn); n != 0 {
			t.Errorf("calls %v: %s %d times, want none (the writer's task and time come from the record)", c, fn, n)
		}
	}
	if count(c, "FnProbeReadUser") != 1 || count(c, "FnMapPushElem") != 1 {
		t.Errorf("calls %v: want one bpf_probe_read_user (the record) and one push (the snapshot)", c)
	}

	stack := *p
	stack.Triggers = []*EventTrigger{{Kind: Stacktrace, Ring: fakeMap(7)}}
	if _, err := CompileMarkerHist(&stack); !errors.Is(err, ErrHistUnsupported) {
		t.Errorf("stacktrace trigger: %v", err)
	}
	ring := *p
	ring.Ring, ring.Switch = fakeMap(8), fakeMap(9)
	if _, err := CompileMarkerHist(&ring); err == nil {
		t.Error("a marker program with a ring of its own compiled")
	}
}

// TestTracepointFilterCommonContext: a static event's filter, and a hist
// trigger's, on common_flags and common_preempt_count compile (6.1.192
// and 6.12.95 take them: "common_preempt_count == 1" on sys_enter_write
// passes dd's writes), reading the record's fields, which the program
// writes from Flags and Preempt before the filter runs.
func TestTracepointFilterCommonContext(t *testing.T) {
	ev, err := filter.FieldsFromFormat(printFormat, true)
	if err != nil {
		t.Fatal(err)
	}
	f, ferr := filter.Parse(`common_preempt_count == 1 && !(common_flags & 1)`, ev, &filter.Env{Dialect: grammar.Latest, CPUs: 1})
	if ferr != nil {
		t.Fatal(ferr)
	}
	pid := &filter.Field{Name: "common_pid", Class: filter.Numeric, Offset: 4, Size: 4, Signed: true}
	h := &Hist{Map: fakeMap(10), Counts: fakeMap(11), KeySize: 8, Keys: []HistKey{{Field: pid, Size: 8}}, Filter: f}
	const size = 24
	p := &TracepointHist{Size: size, Type: 5, Scratch: fakeMap(4), ScratchSize: HistScratch(size), Hists: []*Hist{h},
		Ring: fakeMap(5), Switch: fakeMap(6), Filter: f, Flags: 0, Preempt: 1}
	ins, err := CompileTracepointHist(p)
	if err != nil {
		t.Fatal(err)
	}
	stored := false
	for _, x := range ins {
		if x.OpCode.Class().IsStore() && x.OpCode.Mode() == asm.MemMode && x.Offset == int16(recOff(2)) && x.Constant == 0x100 {
			stored = true
		}
	}
	if !stored {
		t.Errorf("no store of common_flags 0 and common_preempt_count 1 into the record:\n%v", ins)
	}
}
