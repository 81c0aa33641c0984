package bpfcode

import (
	"errors"
	"fmt"

	"github.com/cilium/ebpf/asm"

	"github.com/ktrace-dev/ktrace/fetchargs"
	"github.com/ktrace-dev/ktrace/filter"
	"github.com/ktrace-dev/ktrace/kernel"
)

// Maps are the maps compiled programs use; one set serves every probe of
// a tracing session.
type Maps struct {
	// Ring is the BPF_MAP_TYPE_RINGBUF records go to.
	Ring asm.FDer
	// Scratch is a BPF_MAP_TYPE_ARRAY with one value per possible CPU (key:
	// CPU number) of at least ScratchSize bytes, where records are built.
	Scratch asm.FDer
	// Counters is a BPF_MAP_TYPE_PERCPU_ARRAY keyed by probe index with
	// values {hits, misses uint64}: each CPU counts its own, without
	// atomic operations, and a reader sums them.
	Counters asm.FDer
	// EntryDepth (BPF_MAP_TYPE_LRU_HASH, key {pid_tgid, probe index} u64
	// pair, value u64) and EntryData (BPF_MAP_TYPE_LRU_HASH, key {pid_tgid,
	// probe index << 32 | depth}, value EntryDataSize bytes) carry the
	// function arguments a return probe saved at entry. They may be nil
	// when no probe uses entry data.
	EntryDepth, EntryData asm.FDer
	// Follow (BPF_MAP_TYPE_HASH, key u32 thread group id, value u32) holds
	// the processes a ProbeProgram.Follow program records: those whose
	// value is 1. It may be nil when no program follows.
	Follow asm.FDer
	// Probes (BPF_MAP_TYPE_ARRAY keyed by probe index, value ProbeInfo)
	// gives programs shared by several probes (ProbeProgram.Cookie) each
	// probe's event ID and IP. It may be nil when no program is shared.
	Probes asm.FDer
	// IrqState is IrqStateProgram's map, which event probes on static
	// events with a Context take their records' irqs-off bit from
	// (CPUContext.IrqState). It may be nil: the bit is then the one
	// Flags gives, set in hardirqs and NMIs.
	IrqState asm.FDer
}

// ProbeInfo is a value of the Probes map: what a shared program cannot
// hold as constants.
type ProbeInfo struct {
	IP      uint64 // __probe_ip, or __probe_func for return kinds
	EventID uint64 // common_type
}

// CounterSize is the value size of the Counters map.
const CounterSize = 16

// ProbeProgram describes one probe to compile.
type ProbeProgram struct {
	Arch    *kernel.Arch
	EventID uint16
	// Index identifies the probe in the ring buffer header and the
	// Counters, EntryDepth and EntryData maps.
	Index  uint32
	Return bool // kretprobe/fexit record
	// IP is __probe_ip (entry kinds) or __probe_func (return kinds). For
	// entry kinds 0 means "ask bpf_get_func_ip" (kprobe-multi programs
	// attached to several functions).
	IP     uint64
	Args   []*fetchargs.Arg
	Layout *fetchargs.Layout
	// EntryDataSize is the value size of Maps.EntryData (8 per slot of the
	// probe that saves the most).
	EntryDataSize int
	// WakeupBytes batches reader wake-ups: only the record that takes
	// the ring buffer's fill level across this many bytes wakes the
	// reader (BPF_RB_FORCE_WAKEUP); every other record is sent with
	// BPF_RB_NO_WAKEUP, and the reader polls on its own. A reader sleeps
	// only once it has emptied the ring, so the fill level crosses the
	// mark again before it needs waking again; a wake-up per record
	// above the mark would cost an IRQ-work interrupt per hit while the
	// reader is busy anyway. 0 wakes the reader as the kernel decides
	// (when the record is the first one it has not read).
	WakeupBytes int
	// EndbrIP marks an IP of the form FUNC+4 that ktrace's model guessed
	// (it had no kernel text to read): the program checks the live
	// instruction at FUNC as is_endbr() does (ENDBR64, ENDBR32 or the NOP
	// that sealing leaves, which still moves the kprobe) and records
	// FUNC+0 when none is there.
	EndbrIP bool
	// RawTracepoint marks a t event's program, attached as a raw
	// tracepoint: its context is the tracepoint's argument array, not
	// registers. $argN reads the array (the IR's parameter counts the
	// probe stub's hidden first parameter, which the array does not hold
	// and which is NULL for a t event), IP must be given, and register,
	// stack and return-value fetches do not exist.
	RawTracepoint bool
	// TracepointCtx marks a BPF tracepoint program of a static event
	// (CompileTracepointHist): its stacks are bpf_get_stack's of its
	// context, which unwinds from the regs the perf path saved, not
	// bpf_get_task_stack's, whose walk from the program loses frames
	// under some tracepoints' callers (__schedule under sched_switch).
	TracepointCtx bool
	// TracepointIter is TracepointHist.Iterator.
	TracepointIter uint64
	// IgnoreTgid, when not 0, is a process whose hits the program counts
	// but does not record: the tracer's own process, whose reading of the
	// ring buffer would otherwise feed probes on the functions it calls
	// (kfree, vfs_read, ...) and fill the ring with its own hits.
	IgnoreTgid uint32
	// CountOwnHits lets the IgnoreTgid process's hits still go through
	// the histograms and triggers, only their record dropped: set for
	// events about other tasks too (a wakeup or a switch made from one
	// of ktrace's threads happens to the traced system), unset for
	// probes on functions and system calls, whose hits in ktrace's
	// process are ktrace's own work (its replies to /dev/fuse on
	// vfs_write) and have no place in the kernel's histograms.
	CountOwnHits bool
	// Marker marks the program of the trace_marker's event
	// (CompileMarkerHist): the writer's task and CPU come from the
	// record's header, and its triggers always see the record after it
	// was reserved, as the kernel's tracing_mark_write runs them.
	Marker bool
	// EventRecord compiles an event probe's program: a BPF tracepoint
	// program on the attached event, whose context is that event's record
	// and EventFields its fields. $FIELD reads a field as the kernel's
	// get_event_field does. The trace line shows no probe address: the
	// record's address slot carries the attached record's address, which
	// string fields are read relative to.
	EventRecord bool
	EventFields []fetchargs.EventField
	// EventPtrByte: a "char *" field reads as the pointer's first byte
	// (zero-extended), as on 6.12; 6.1 reads the whole pointer.
	EventPtrByte bool
	// PreemptCount is the record's common_preempt_count, which a program
	// cannot read: the depth the kernel's path to the event is known to
	// have: an event probe runs in its tracepoint's preempt-disabled
	// section (one more in a syscall event's, which does not discount
	// its own), a tracepoint probe and an fprobe exit show 1 on 6.12.
	// 0 leaves the byte 0.
	PreemptCount uint8
	// Context, when set, has the record's flags and preempt count read
	// from the CPU's preempt count (CPUContext) rather than
	// PreemptCount; not for uprobes. An event probe's (on a static
	// event) takes its irqs-off bit from Maps.IrqState, Flags' where
	// that has none.
	Context *CPUContext
	// Flags is an event probe's common_flags (EventRecord; other
	// programs compute TRACE_FLAG_IRQS_OFF from the registers).
	Flags uint8
	// User compiles a uprobe program: every memory read (dereferences,
	// strings, $stackN) reads the probed process's memory, the record's
	// __probe_ip is the address the process hit (regs->ip), and @+OFFS
	// reads at that address minus FileOffset plus OFFS. A uretprobe
	// (Return) takes that address from its entry program's
	// fetchargs.EntryIPSlot.
	User       bool
	FileOffset uint64

	// Cookie compiles a program that serves several probes of the same
	// shape, attached through one multi link whose attach cookie is the
	// probe's index: Index, EventID and IP are then read at run time
	// (the cookie, and the Probes map) instead of being constants. Not
	// for raw tracepoints, probes whose IP needs the ENDBR check, or
	// return probes that save entry data.
	Cookie bool
	// Follow records only the processes marked 1 in Maps.Follow (a
	// process tree the tracer keeps there), tested before anything is
	// written.
	Follow bool
	// OnlyPid, when not 0, is the one process (thread group id) or thread
	// whose hits the program records; the others are counted and dropped
	// before anything is written.
	OnlyPid uint32
	// Filter is the event's filter (nil: none): the record is built in
	// the scratch value and sent only when the filter passes it (see
	// filter.go). ScratchSize, the scratch value's size, must be at
	// least FilterScratch(Layout.RecordSize()).
	Filter      *filter.Filter
	ScratchSize int
	// SourceFilter is an event probe's "if" filter (nil: none), which
	// the kernel tests on the attached record before the probe's record
	// is built. The program copies SourceSize bytes of the attached
	// record into the scratch value, gives the copy the common fields the
	// kernel's record has (common_type SourceType, common_pid the current
	// thread) and ends, before anything is reserved, when the filter
	// rejects it. ScratchSize must be at least
	// FilterScratch(SourceSize); CheckSourceFilter says which
	// filters the program can run.
	SourceFilter *filter.Filter
	SourceSize   int
	SourceType   uint16
	// SourceFlags and SourcePreempt are the attached record's
	// common_flags and common_preempt_count, which the filter reads: a
	// tracepoint's context (events.TracepointContext). CheckSourceFilter
	// refuses filters on them where they are not known (a dynamic
	// event's record).
	SourceFlags, SourcePreempt uint8
	// Source, for an event probe on a dynamic event (an fprobe, fexit or
	// tracepoint probe), is the program of that event's probe: the event
	// probe's program runs where the source would (its context is the
	// source's), builds the source's record in the scratch value as the
	// source's program would, and reads $FIELD from it. SourceSize is
	// then the source record's area (SourceAreaSize), which the event
	// probe's own record follows in the scratch value. A source that
	// saves entry data gets them from the entry program CompileEntry
	// builds for it (with the event probe's index).
	Source *ProbeProgram
	// Hists are the event's hist triggers (hist.go): each histogram whose
	// own filter passes the record counts the hit before the event's
	// filter runs. ScratchSize must be at least
	// HistScratch(Layout.RecordSize()).
	Hists []*Hist
	// NoTrace ends the program once the histograms are counted: the
	// event is in soft mode (triggers run, nothing is traced).
	NoTrace bool
	// TraceSwitch, when set, is a BPF_MAP_TYPE_ARRAY of one u32 that
	// decides at run time what NoTrace decides when compiling: 0 ends
	// the program once the histograms are counted. Enabling and
	// disabling an event with histograms then changes no program.
	TraceSwitch asm.FDer
	// Triggers are the event's trigger commands other than hist
	// (triggers.go).
	Triggers []*EventTrigger
	// TracingOn, when set, is tracing_on: a BPF_MAP_TYPE_ARRAY of one
	// u32, 0 while no record is written (traceon and traceoff triggers
	// switch it).
	TracingOn asm.FDer
}

// UprobeMaxData is the most a uprobe's arguments and strings may take
// (PAGE_SIZE): the kernel drops a hit that needs more.
const UprobeMaxData = 4096

// userDataBound reports whether the program checks UprobeMaxData: a
// uprobe's with strings (its fixed part alone is far below a page).
func (e *emitter) userDataBound() bool {
	return e.p.User && e.p.Layout.Strings > 0
}

// endbr64 is the ENDBR64 instruction (f3 0f 1e fa) read as a little-endian
// u32.
const endbr64 = 0xfa1e0ff3

// The 4-byte NOPs IBT sealing writes over an ENDBR64 at boot, which
// is_endbr() still counts: "osp nopl (%rax)" on 6.12 and "nopl -42(%rax)"
// on later kernels, read as little-endian u32s.
const (
	endbrPoison    = 0x001f0f66
	endbrPoisonNew = 0xd6401f0f
)

// bpf_ringbuf_query's flag and bpf_ringbuf_submit's and
// bpf_ringbuf_output's wake-up flags, and the size of the header the
// kernel puts before each ring buffer record.
const (
	bpfRbAvailData   = 0
	bpfRbNoWakeup    = 1
	bpfRbForceWakeup = 2
	ringbufHdrSize   = 8
)

// Registers the generated code keeps live across helper calls.
const (
	rCtx  = asm.R6 // struct pt_regs *
	rBuf  = asm.R7 // scratch value: ktrace header, then the record
	rVal  = asm.R8 // the fetched value of the argument being compiled
	rTmp9 = asm.R9 // lval (array of strings), entry depth
)

// Stack slots (offsets from R10).
const (
	stkTmp  = -8  // 8-byte read target
	stkKey  = -16 // u32 map key
	stkKeyA = -32 // 16-byte map key
	stkKeyB = -48 // 16-byte map key
	// stkEnd is the end of the record's used part (u64): the fixed
	// part, then the end of the last string written. Only that much is
	// sent, so a string slot costs the string's length, not the slot's.
	stkEnd = -56
	// stkCookie holds the attach cookie (the probe index) of a shared
	// program.
	stkCookie = -64
	// stkPidTgid and stkCPU keep bpf_get_current_pid_tgid's and
	// bpf_get_smp_processor_id's results: each helper is called once.
	stkPidTgid = -72
	stkCPU     = -80
	// stkSrc holds the address of an event probe's source record, built
	// in the scratch value (ProbeProgram.Source).
	stkSrc = -88
	// stkDyn sums a uprobe record's string lengths (UprobeMaxData).
	stkDyn   = -96
	taskSize = 0x00007ffffffff000
)

// ErrUnsupported is wrapped by compile errors for fetch programs ktrace
// cannot express in eBPF (uprobe file offsets, eprobe fields).
var ErrUnsupported = errors.New("fetch operation not supported by the eBPF backend")

// Compile returns the eBPF program of one probe. The arguments' @SYM
// references must be resolved (events does it when it arms a probe).
func Compile(p *ProbeProgram, m *Maps) (asm.Instructions, error) {
	e, err := compileBody(p, m, "")
	if err != nil {
		return nil, err
	}
	return e.program(), nil
}

// compileBody emits the program of p, its functions apart, with every
// label starting with prefix.
func compileBody(p *ProbeProgram, m *Maps, prefix string) (*emitter, error) {
	if p == nil || p.Layout == nil || m == nil {
		return nil, fmt.Errorf("fetchargs: compile: incomplete probe")
	}
	if p.Arch == nil {
		return nil, fmt.Errorf("fetchargs: compile: no architecture")
	}
	if len(p.Layout.Offsets) != len(p.Args) {
		return nil, fmt.Errorf("fetchargs: compile: layout has %d arguments, probe %d", len(p.Layout.Offsets), len(p.Args))
	}
	if p.Layout.ScratchSize() > 1<<15-1 {
		return nil, fmt.Errorf("fetchargs: compile: record of %d bytes too large", p.Layout.ScratchSize())
	}
	if p.Cookie && (p.RawTracepoint || p.EndbrIP || (p.Return && len(p.Layout.EntrySlots) > 0)) {
		return nil, fmt.Errorf("fetchargs: compile: a shared program cannot serve this probe")
	}
	if src := p.Source; src != nil {
		switch {
		case !p.EventRecord || p.Cookie:
			return nil, fmt.Errorf("fetchargs: compile: a source record outside an event probe")
		case src.Layout == nil || len(src.Layout.Offsets) != len(src.Args):
			return nil, fmt.Errorf("fetchargs: compile: incomplete source probe")
		case src.Source != nil || src.User:
			return nil, fmt.Errorf("fetchargs: compile: an event probe on this source: %w", ErrUnsupported)
		case p.SourceSize != SourceAreaSize(src.Layout):
			return nil, fmt.Errorf("fetchargs: compile: source size %d, want %d", p.SourceSize, SourceAreaSize(src.Layout))
		}
	}
	e := &emitter{p: p, maps: m, prefix: prefix}
	// A record of fixed size is written where it will be read: reserved
	// in the ring buffer, with no copy. Records with strings send only
	// their used part (a bounded copy from the scratch value), and
	// return probes with entry data keep it in the scratch value.
	e.reserve = p.Layout.Strings == 0 && !(p.Return && len(p.Layout.EntrySlots) > 0) && p.Filter == nil && len(p.Hists) == 0 && !p.NoTrace && p.TraceSwitch == nil && len(p.Triggers) == 0
	if err := p.checkTriggers(); err != nil {
		return nil, err
	}
	e.emit(asm.Mov.Reg(rCtx, asm.R1))
	if p.Cookie {
		e.emit(
			asm.FnGetAttachCookie.Call(),
			asm.StoreMem(asm.R10, stkCookie, asm.R0, asm.DWord),
		)
	}
	if err := e.prologue(); err != nil {
		return nil, err
	}
	if err := e.header(); err != nil {
		return nil, err
	}
	e.headerComm = true
	if p.Return && len(p.Layout.EntrySlots) > 0 {
		if err := e.loadEntryData(); err != nil {
			return nil, err
		}
	}
	if p.User && p.Return {
		// A uretprobe's record names the probed function: the address
		// its entry was hit at.
		if err := e.entryIP(); err != nil {
			return nil, err
		}
		e.emit(asm.StoreMem(rBuf, recOff(8), rVal, asm.DWord))
	}
	if e.reserve {
		e.zeroArgs()
	}
	if e.userDataBound() {
		e.emit(zeroDWord(asm.R10, stkDyn))
	}
	for i, a := range p.Args {
		if err := e.arg(i, a); err != nil {
			return nil, fmt.Errorf("fetchargs: compile %s: %w", a.Text(), err)
		}
	}
	if e.userDataBound() {
		// The kernel drops a uprobe hit whose arguments and strings
		// take more than a page (__uprobe_trace_func's WARN_ON_ONCE);
		// the hit is counted.
		keep := e.newLabel()
		e.emit(
			asm.LoadMem(asm.R1, asm.R10, stkDyn, asm.DWord),
			asm.Add.Imm(asm.R1, int32(p.Layout.Fixed-p.Layout.ArgsStart)),
			asm.JLE.Imm(asm.R1, UprobeMaxData, keep),
			asm.Mov.Imm(asm.R0, 0),
			asm.Return(),
		)
		e.mark(keep)
	}
	// The event's filter, histograms and triggers read the probe's own
	// record.
	e.ownFields = true
	size := p.Layout.RecordSize()
	cond := p.condTriggers()
	checkTracing := p.TracingOn != nil && !e.reserve
	if cond && checkTracing {
		// Whether the record is written is decided before any trigger
		// runs (the kernel's reserve).
		if err := e.sampleTracing(); err != nil {
			return nil, err
		}
	}
	if len(p.Hists) > 0 {
		if err := e.histStage(size); err != nil {
			return nil, err
		}
	}
	post := ""
	if cond {
		if err := e.triggers(false, size); err != nil {
			return nil, err
		}
		for _, t := range p.Triggers {
			if t.Kind.post() {
				post = e.newLabel()
			}
		}
	} else if err := e.allTriggers(size); err != nil {
		// Nothing needs the record: every trigger runs before it.
		return nil, err
	}
	if !cond && checkTracing {
		if err := e.sampleTracing(); err != nil {
			return nil, err
		}
	}
	// drop ends the hit without a record: the post triggers still run.
	drop := func() {
		if post != "" {
			e.emit(asm.Ja.Label(post))
			return
		}
		e.emit(asm.Mov.Imm(asm.R0, 0), asm.Return())
	}
	if p.NoTrace {
		drop()
	} else {
		if p.TraceSwitch != nil {
			// No value: trace, as compiled.
			on := e.newLabel()
			if err := e.switchValue(p.TraceSwitch, on); err != nil {
				return nil, err
			}
			e.emit(asm.JNE.Imm(asm.R1, 0, on))
			drop()
			e.mark(on)
		}
		if p.Filter != nil {
			if err := e.filterStageTo(p.Filter, size, post); err != nil {
				return nil, err
			}
		}
		if checkTracing {
			on := e.newLabel()
			e.emit(
				asm.LoadMem(asm.R1, asm.R10, stkTracing, asm.DWord),
				asm.JNE.Imm(asm.R1, 0, on),
			)
			drop()
			e.mark(on)
		}
		own := ""
		if e.p.IgnoreTgid != 0 && e.p.lateIgnore() {
			// ktrace's own hit: counted above, not recorded.
			own = post
			if own == "" {
				own = e.newLabel()
			}
			if e.p.ownInTask() {
				e.ignoreTgidInTask(e.p.IgnoreTgid, own)
			} else {
				e.ignoreTgid(e.p.IgnoreTgid, own)
			}
		}
		if err := e.output(post); err != nil {
			return nil, err
		}
		if own != "" && own != post {
			e.mark(own)
			e.emit(asm.Mov.Imm(asm.R0, 0), asm.Return())
		}
	}
	if post != "" {
		e.mark(post)
		if err := e.triggers(true, size); err != nil {
			return nil, err
		}
		e.emit(asm.Mov.Imm(asm.R0, 0), asm.Return())
	}
	return e, nil
}

// counter adds 1 to the probe's hits (field 0) or misses (field 8).
func (e *emitter) counter(field int16) error {
	e.indexKey()
	return e.bump(e.maps.Counters, field)
}

// bump adds 1 to the u64 at field of m's value for the key at stkKey.
func (e *emitter) bump(m asm.FDer, field int16) error {
	if err := e.lookup(m, stkKey); err != nil {
		return err
	}
	// The value is this CPU's (a per-CPU array): a plain increment, no
	// atomic operation. A program runs to completion on one CPU.
	skip := e.newLabel()
	e.emit(
		asm.JEq.Imm(asm.R0, 0, skip),
		asm.LoadMem(asm.R1, asm.R0, field, asm.DWord),
		asm.Add.Imm(asm.R1, 1),
		asm.StoreMem(asm.R0, field, asm.R1, asm.DWord),
	)
	e.mark(skip)
	return nil
}

// indexKey stores the probe's index at stkKey: a constant, or the attach
// cookie of a shared program.
func (e *emitter) indexKey() {
	if e.p.Cookie {
		e.emit(
			asm.LoadMem(asm.R1, asm.R10, stkCookie, asm.Word),
			asm.StoreMem(asm.R10, stkKey, asm.R1, asm.Word),
		)
		return
	}
	e.emit(asm.StoreImm(asm.R10, stkKey, int64(e.p.Index), asm.Word))
}

// prologue counts the hit, drops the hits of other processes than the
// wanted ones, and finds where the record is built (rBuf): its place in
// the ring buffer, or this CPU's scratch value.
func (e *emitter) prologue() error {
	if err := e.counter(0); err != nil {
		return err
	}
	e.emit(
		asm.FnGetCurrentPidTgid.Call(),
		asm.StoreMem(asm.R10, stkPidTgid, asm.R0, asm.DWord),
	)
	if e.p.IgnoreTgid != 0 && !e.p.lateIgnore() && !e.p.ownInTask() {
		keep := e.newLabel()
		e.emit(
			asm.RSh.Imm(asm.R0, 32),
			asm.JNE.Imm(asm.R0, int32(e.p.IgnoreTgid), keep),
			asm.Mov.Imm(asm.R0, 0),
			asm.Return(),
		)
		e.mark(keep)
	}
	if e.p.OnlyPid != 0 {
		keep := e.newLabel()
		e.emit(
			asm.LoadMem(asm.R0, asm.R10, stkPidTgid, asm.DWord),
			asm.Mov.Reg(asm.R1, asm.R0),
			asm.LSh.Imm(asm.R1, 32),
			asm.RSh.Imm(asm.R1, 32),
			asm.JEq.Imm(asm.R1, int32(e.p.OnlyPid), keep),
			asm.RSh.Imm(asm.R0, 32),
			asm.JEq.Imm(asm.R0, int32(e.p.OnlyPid), keep),
			asm.Mov.Imm(asm.R0, 0),
			asm.Return(),
		)
		e.mark(keep)
	}
	if e.p.Follow {
		keep := e.newLabel()
		e.emit(
			asm.LoadMem(asm.R0, asm.R10, stkPidTgid, asm.DWord),
			asm.RSh.Imm(asm.R0, 32),
			asm.StoreMem(asm.R10, stkKey, asm.R0, asm.Word),
		)
		if err := e.lookup(e.maps.Follow, stkKey); err != nil {
			return err
		}
		drop := e.newLabel()
		e.emit(
			asm.JEq.Imm(asm.R0, 0, drop),
			asm.LoadMem(asm.R1, asm.R0, 0, asm.Word),
			asm.JEq.Imm(asm.R1, 1, keep),
		)
		e.mark(drop)
		e.emit(asm.Mov.Imm(asm.R0, 0), asm.Return())
		e.mark(keep)
	}
	e.emit(
		asm.FnGetSmpProcessorId.Call(),
		asm.StoreMem(asm.R10, stkCPU, asm.R0, asm.Word),
	)
	if e.p.Source != nil {
		if err := e.sourceRecord(); err != nil {
			return err
		}
	}
	if e.p.SourceFilter != nil {
		if err := e.sourceFilter(); err != nil {
			return err
		}
	}
	if e.reserve {
		if e.p.TracingOn != nil {
			// tracing_on 0: nothing is reserved.
			if err := e.sampleTracing(); err != nil {
				return err
			}
			on := e.newLabel()
			e.emit(
				asm.LoadMem(asm.R1, asm.R10, stkTracing, asm.DWord),
				asm.JNE.Imm(asm.R1, 0, on),
				asm.Mov.Imm(asm.R0, 0),
				asm.Return(),
			)
			e.mark(on)
		}
		if err := e.mapPtr(asm.R1, e.maps.Ring); err != nil {
			return err
		}
		ok := e.newLabel()
		e.emit(
			asm.Mov.Imm(asm.R2, int32(fetchargs.HeaderSize+e.p.Layout.RecordSize())),
			asm.Mov.Imm(asm.R3, 0),
			asm.FnRingbufReserve.Call(),
			asm.JNE.Imm(asm.R0, 0, ok),
		)
		// The ring buffer is full: a miss.
		if err := e.counter(8); err != nil {
			return err
		}
		e.emit(asm.Mov.Imm(asm.R0, 0), asm.Return())
		e.mark(ok)
		e.emit(asm.Mov.Reg(rBuf, asm.R0))
		return nil
	}
	if e.p.Source != nil {
		// rBuf is the scratch value sourceRecord found; the source
		// record comes first in it.
		e.emit(asm.Add.Imm(rBuf, int32(e.p.SourceSize)))
		return nil
	}
	return e.cpuScratch()
}

// SourceAreaSize is the part of the scratch value an event probe's source
// record takes (ProbeProgram.Source): ktrace's header, the record and the
// copy of its entry data, rounded up to 8 bytes.
func SourceAreaSize(l *fetchargs.Layout) int {
	return (l.ScratchSize() + 7) &^ 7
}

// sourceRecord builds an event probe's source record at the start of this
// CPU's scratch value, as the source's own program builds it (its probe
// fields and arguments; the common fields are not read by $FIELD), and
// keeps its address at stkSrc.
func (e *emitter) sourceRecord() error {
	if err := e.cpuScratch(); err != nil {
		return err
	}
	p, reserve, comm := e.p, e.reserve, e.headerComm
	e.p, e.reserve, e.headerComm = p.Source, false, false
	defer func() { e.p, e.reserve, e.headerComm = p, reserve, comm }()
	e.emit(
		asm.Mov.Imm(asm.R1, int32(e.p.Layout.Fixed)),
		asm.StoreMem(asm.R10, stkEnd, asm.R1, asm.DWord),
	)
	e.zeroArgs()
	if err := e.probeFields(); err != nil {
		return err
	}
	if e.p.Return && len(e.p.Layout.EntrySlots) > 0 {
		// What the event probe's entry program saved
		// (CompileEntry of the source).
		if err := e.loadEntryData(); err != nil {
			return err
		}
	}
	for i, a := range e.p.Args {
		if err := e.arg(i, a); err != nil {
			return fmt.Errorf("fetchargs: compile source %s: %w", a.Text(), err)
		}
	}
	e.emit(
		asm.Mov.Reg(asm.R1, rBuf),
		asm.Add.Imm(asm.R1, fetchargs.HeaderSize),
		asm.StoreMem(asm.R10, stkSrc, asm.R1, asm.DWord),
	)
	return nil
}

// cpuScratch looks up this CPU's scratch value (stkCPU) into rBuf.
func (e *emitter) cpuScratch() error {
	e.emit(
		asm.LoadMem(asm.R1, asm.R10, stkCPU, asm.Word),
		asm.StoreMem(asm.R10, stkKey, asm.R1, asm.Word),
	)
	return e.scratchBuf()
}

// scratchBuf looks up the scratch value keyed by stkKey (this CPU) into
// rBuf, ending the program when there is none.
func (e *emitter) scratchBuf() error {
	if err := e.lookup(e.maps.Scratch, stkKey); err != nil {
		return err
	}
	ok := e.newLabel()
	e.emit(
		asm.JNE.Imm(asm.R0, 0, ok),
		asm.Mov.Imm(asm.R0, 0),
		asm.Return(),
	)
	e.mark(ok)
	e.emit(asm.Mov.Reg(rBuf, asm.R0))
	return nil
}

// bail ends the program without a record: a reserved one is discarded.
func (e *emitter) bail() {
	if e.reserve {
		e.emit(
			asm.Mov.Reg(asm.R1, rBuf),
			asm.Mov.Imm(asm.R2, 0),
			asm.FnRingbufDiscard.Call(),
		)
	}
	e.emit(asm.Mov.Imm(asm.R0, 0), asm.Return())
}

// zeroArgs clears the arguments' part of a reserved record, which holds
// whatever the ring buffer held before: an argument whose read fails
// reads 0, as in the scratch value.
func (e *emitter) zeroArgs() {
	l := e.p.Layout
	e.emit(asm.Mov.Imm(asm.R1, 0))
	for off := l.ArgsStart; off < l.Fixed; {
		switch n := l.Fixed - off; {
		case n >= 8:
			e.emit(asm.StoreMem(rBuf, recOff(off), asm.R1, asm.DWord))
			off += 8
		case n >= 4:
			e.emit(asm.StoreMem(rBuf, recOff(off), asm.R1, asm.Word))
			off += 4
		case n >= 2:
			e.emit(asm.StoreMem(rBuf, recOff(off), asm.R1, asm.Half))
			off += 2
		default:
			e.emit(asm.StoreMem(rBuf, recOff(off), asm.R1, asm.Byte))
			off++
		}
	}
}

// header writes ktrace's header and the record's common and probe fields.
func (e *emitter) header() error {
	flagsOff, ok := e.p.Arch.Regs["flags"]
	e.emit(
		asm.Mov.Imm(asm.R1, int32(e.p.Layout.Fixed)),
		asm.StoreMem(asm.R10, stkEnd, asm.R1, asm.DWord),
	)
	e.emit(
		asm.FnKtimeGetNs.Call(),
		asm.StoreMem(rBuf, 0, asm.R0, asm.DWord),
		asm.LoadMem(asm.R0, asm.R10, stkCPU, asm.Word),
		asm.StoreMem(rBuf, 8, asm.R0, asm.Word),
		asm.Mov.Reg(asm.R1, rBuf),
		asm.Add.Imm(asm.R1, 16),
		asm.Mov.Imm(asm.R2, 16),
		asm.FnGetCurrentComm.Call(),
		asm.StoreImm(rBuf, recOff(2), 0, asm.Half),
	)
	if e.p.Cookie {
		// Index from the cookie; event ID and IP from the Probes map.
		e.indexKey()
		e.emit(
			asm.LoadMem(asm.R1, asm.R10, stkKey, asm.Word),
			asm.StoreMem(rBuf, 12, asm.R1, asm.Word),
		)
		if err := e.lookup(e.maps.Probes, stkKey); err != nil {
			return err
		}
		found := e.newLabel()
		e.emit(asm.JNE.Imm(asm.R0, 0, found))
		e.bail()
		e.mark(found)
		e.emit(
			asm.LoadMem(asm.R1, asm.R0, 8, asm.DWord),
			asm.StoreMem(rBuf, recOff(0), asm.R1, asm.Half),
			asm.LoadMem(asm.R1, asm.R0, 0, asm.DWord),
			asm.StoreMem(rBuf, recOff(8), asm.R1, asm.DWord),
		)
	} else {
		e.emit(
			asm.StoreImm(rBuf, 12, int64(e.p.Index), asm.Word),
			asm.StoreImm(rBuf, recOff(0), int64(e.p.EventID), asm.Half),
		)
	}
	if e.p.RawTracepoint && e.p.IP == 0 {
		return fmt.Errorf("fetchargs: compile: a tracepoint program needs its IP")
	}
	if ok && e.p.Arch.Name == "x86_64" && !e.p.RawTracepoint && !e.p.EventRecord {
		// TRACE_FLAG_IRQS_OFF when EFLAGS.IF (bit 9) is clear.
		e.emit(
			asm.LoadMem(asm.R1, rCtx, int16(flagsOff), asm.DWord),
			asm.RSh.Imm(asm.R1, 9),
			asm.And.Imm(asm.R1, 1),
			asm.Xor.Imm(asm.R1, 1),
			asm.StoreMem(rBuf, recOff(2), asm.R1, asm.Byte),
		)
	}
	if e.p.EventRecord && e.p.Flags != 0 {
		e.emit(asm.StoreImm(rBuf, recOff(2), int64(e.p.Flags), asm.Byte))
	}
	if c := e.p.Context; c != nil && !e.p.User {
		if e.p.EventRecord && c.IrqState == nil && e.maps.IrqState != nil {
			cc := *c
			cc.IrqState = e.maps.IrqState
			c = &cc
		}
		if err := e.cpuContext(c); err != nil {
			return err
		}
		if e.p.ownInTask() && !e.p.lateIgnore() {
			// ktrace's own hit, now that the record tells it was not
			// in an interrupt that came upon its thread (prologue).
			own, keep := e.newLabel(), e.newLabel()
			e.ignoreTgidInTask(e.p.IgnoreTgid, own)
			e.emit(asm.Ja.Label(keep))
			e.mark(own)
			e.bail()
			e.mark(keep)
		}
	} else if e.p.PreemptCount != 0 {
		e.emit(asm.StoreImm(rBuf, recOff(3), int64(e.p.PreemptCount), asm.Byte))
	}
	e.emit(
		asm.LoadMem(asm.R0, asm.R10, stkPidTgid, asm.DWord),
		asm.StoreMem(rBuf, recOff(4), asm.R0, asm.Word),
		asm.RSh.Imm(asm.R0, 32),
		asm.StoreMem(rBuf, 32, asm.R0, asm.DWord),
	)
	if e.p.EventRecord {
		// The attached record's address, as a number: $FIELD reads of
		// string fields add to it.
		if e.p.Source != nil {
			e.emit(asm.LoadMem(asm.R1, asm.R10, stkSrc, asm.DWord), asm.StoreMem(rBuf, recOff(8), asm.R1, asm.DWord))
		} else {
			e.emit(asm.StoreMem(rBuf, recOff(8), rCtx, asm.DWord))
		}
		return nil
	}
	return e.probeFields()
}

// probeFields writes the record's probe fields: __probe_ip, or
// __probe_func and __probe_ret_ip.
func (e *emitter) probeFields() error {
	if e.p.User && e.p.Return {
		// The function's address comes from the entry data (Compile);
		// the return address is stored below.
	} else if e.p.User {
		// The uprobe handler has moved regs->ip back to the probed
		// address.
		if err := e.loadIP(); err != nil {
			return err
		}
		e.emit(asm.StoreMem(rBuf, recOff(8), rVal, asm.DWord))
	} else if e.p.Cookie {
		// The IP came from the Probes map above.
	} else if e.p.IP != 0 && e.p.EndbrIP && !e.p.Return && !e.p.RawTracepoint {
		keep := e.newLabel()
		e.emit(
			asm.Mov.Reg(asm.R1, asm.R10),
			asm.Add.Imm(asm.R1, stkTmp),
			asm.Mov.Imm(asm.R2, 4),
			asm.LoadImm(asm.R3, int64(e.p.IP-4), asm.DWord),
			asm.FnProbeReadKernel.Call(),
			asm.LoadImm(rVal, int64(e.p.IP), asm.DWord),
			asm.JNE.Imm(asm.R0, 0, keep),
			asm.LoadMem(asm.R1, asm.R10, stkTmp, asm.Word),
			// is_endbr(): ENDBR64, ENDBR32 and the sealed forms.
			asm.LoadImm(asm.R2, endbrPoison, asm.DWord),
			asm.JEq.Reg(asm.R1, asm.R2, keep),
			asm.LoadImm(asm.R2, endbrPoisonNew, asm.DWord),
			asm.JEq.Reg(asm.R1, asm.R2, keep),
			asm.And.Imm(asm.R1, ^0x01000000),
			asm.LoadImm(asm.R2, endbr64, asm.DWord),
			asm.JEq.Reg(asm.R1, asm.R2, keep),
			asm.Add.Imm(rVal, -4),
		)
		e.mark(keep)
		e.emit(asm.StoreMem(rBuf, recOff(8), rVal, asm.DWord))
	} else if e.p.IP != 0 {
		e.emit(
			asm.LoadImm(asm.R1, int64(e.p.IP), asm.DWord),
			asm.StoreMem(rBuf, recOff(8), asm.R1, asm.DWord),
		)
	} else {
		e.emit(
			asm.Mov.Reg(asm.R1, rCtx),
			asm.FnGetFuncIp.Call(),
			asm.StoreMem(rBuf, recOff(8), asm.R0, asm.DWord),
		)
	}
	if e.p.Return {
		// The return handler sees the real return address in regs->ip.
		if err := e.loadIP(); err != nil {
			return err
		}
		e.emit(asm.StoreMem(rBuf, recOff(16), rVal, asm.DWord))
	}
	return nil
}

func ipReg(a *kernel.Arch) string {
	if a.Name == "arm64" {
		return "pc"
	}
	return "ip"
}

// wakeupFlag emits the flags argument of the ring buffer's submit or
// output into dst: BPF_RB_FORCE_WAKEUP when this record carries the ring's
// fill level across the wakeup mark, else BPF_RB_NO_WAKEUP. A reserved
// record is in the fill level already: it crossed the mark when the level
// is in [mark, mark+size). An output record is not yet: it crosses the
// mark when the level is in [mark-size, mark), size being the largest the
// record can be.
func (e *emitter) wakeupFlag(dst asm.Register, reserved bool) {
	size := ringbufHdrSize + fetchargs.HeaderSize + e.p.Layout.RecordSize()
	adjust := -int32(e.p.WakeupBytes)
	if !reserved {
		adjust = int32(size - e.p.WakeupBytes)
	}
	flags := e.newLabel()
	e.emit(
		asm.Mov.Imm(asm.R2, bpfRbAvailData),
		asm.FnRingbufQuery.Call(),
		asm.Mov.Imm(dst, bpfRbNoWakeup),
		asm.Add.Imm(asm.R0, adjust),
		asm.JGE.Imm(asm.R0, int32(size), flags),
		asm.Mov.Imm(dst, bpfRbForceWakeup),
	)
	e.mark(flags)
}

// output sends the record and counts a miss when the ring buffer is full,
// then ends the program, or goes on at next when it is not "".
func (e *emitter) output(next string) error {
	end := func() {
		if next != "" {
			e.emit(asm.Ja.Label(next))
			return
		}
		e.emit(asm.Mov.Imm(asm.R0, 0), asm.Return())
	}
	if err := e.mapPtr(asm.R1, e.maps.Ring); err != nil {
		return err
	}
	if e.reserve {
		// Submit the record built in place.
		e.emit(asm.Mov.Imm(asm.R2, 0))
		if e.p.WakeupBytes > 0 {
			e.wakeupFlag(asm.R2, true)
		}
		e.emit(
			asm.Mov.Reg(asm.R1, rBuf),
			asm.FnRingbufSubmit.Call(),
		)
		end()
		return nil
	}
	done := e.newLabel()
	if e.p.WakeupBytes > 0 {
		e.wakeupFlag(rVal, false)
		if err := e.mapPtr(asm.R1, e.maps.Ring); err != nil {
			return err
		}
		e.emit(asm.Mov.Reg(asm.R4, rVal))
	} else {
		e.emit(asm.Mov.Imm(asm.R4, 0))
	}
	// Send the header and the record's used part: a bounded copy.
	size := e.newLabel()
	e.emit(
		asm.Mov.Reg(asm.R2, rBuf),
		asm.LoadMem(asm.R3, asm.R10, stkEnd, asm.DWord),
		asm.JLE.Imm(asm.R3, int32(e.p.Layout.RecordSize()), size),
		asm.Mov.Imm(asm.R3, int32(e.p.Layout.RecordSize())),
	)
	e.mark(size)
	e.emit(
		asm.Add.Imm(asm.R3, fetchargs.HeaderSize),
		asm.FnRingbufOutput.Call(),
		asm.JEq.Imm(asm.R0, 0, done),
	)
	if err := e.counter(8); err != nil {
		return err
	}
	e.mark(done)
	end()
	return nil
}
