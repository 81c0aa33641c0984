package bpfcode

import (
	"fmt"

	"github.com/cilium/ebpf/asm"

	"github.com/ktrace-dev/ktrace/fetchargs"
	"github.com/ktrace-dev/ktrace/filter"
	"github.com/ktrace-dev/ktrace/kernel"
)

// TracepointHist describes the program that counts the hist triggers of
// one of the kernel's static events: a BPF tracepoint program whose
// context is the event's record, as the format file lays it out (the perf
// path has put its pt_regs pointer over the common fields, which the
// program writes back: common_type, common_pid from the current thread,
// common_flags and common_preempt_count from Context, or as Flags and
// Preempt without it, which the event's filter, its triggers' filters
// and its hist keys read).
type TracepointHist struct {
	// Size is how many bytes of the record are copied: its fixed fields
	// and room for its dynamic data.
	Size int
	// Type is the event's ID (common_type).
	Type uint16
	// IgnoreTgid, when not 0, is a process whose hits are not traced
	// (the tracer itself); with CountOwnHits (ProbeProgram's) they still
	// go through the histograms and triggers.
	IgnoreTgid   uint32
	CountOwnHits bool
	// Scratch is a BPF_MAP_TYPE_ARRAY with one value per possible CPU of
	// at least HistScratch(Size) bytes.
	Scratch     asm.FDer
	ScratchSize int
	Hists       []*Hist
	// Triggers and TracingOn are as ProbeProgram's.
	Triggers  []*EventTrigger
	TracingOn asm.FDer
	// Ring, when set, also traces the event (it is in soft mode): when
	// Switch (one u32) is on and tracing is on, the record goes there
	// after a SynthHeader-format header carrying Num.
	Ring   asm.FDer
	Switch asm.FDer
	Num    uint32
	// Filter is the event's filter, which decides what Ring gets (nil:
	// none).
	Filter *filter.Filter
	// Iterator, when not 0, is the address of the tracepoint's
	// iterator (__traceiter_EVENT), which the stacks the program takes
	// start with when their unwinding does not: the kernel calls a
	// tracepoint's probes through it when it has more than one, as its
	// own tracer's sched_switch and sched_wakeup have (the cmdline
	// recorder is the other), where the static call reaches a lone probe
	// such as the program's directly.
	Iterator uint64
	// UserRegs marks a system call's event, whose perf path gives the
	// program the task's user registers on 6.1 (no kernel frame to
	// unwind): its stacks are the task's (bpf_get_task_stack), as a
	// kprobe's.
	UserRegs bool
	// Flags and Preempt are the record's common_flags and
	// common_preempt_count where ktrace knows them whatever the context
	// (0 elsewhere, the values of a hit in a task's context): filters and
	// hist keys on those fields read them, and the synthetic events the
	// histograms generate take theirs from them.
	Flags, Preempt uint8
	// Context, when set, has the record's flags and preempt count read
	// from the CPU's preempt count, Flags' irqs-off bit standing where
	// the interrupt flag is not found (CPUContext.IrqState).
	Context *CPUContext
}

// CompileTracepointHist returns the program of p.
func CompileTracepointHist(p *TracepointHist) (asm.Instructions, error) {
	if p.Size <= 0 || p.Size > maxSourceSize {
		return nil, fmt.Errorf("fetchargs: compile: a record of %d bytes", p.Size)
	}
	for _, h := range p.Hists {
		if h.Filter != nil {
			if err := CheckFilter(h.Filter); err != nil {
				return nil, err
			}
		}
	}
	e := &emitter{
		p:    &ProbeProgram{TracepointCtx: !p.UserRegs, TracepointIter: p.Iterator, ScratchSize: p.ScratchSize, Hists: p.Hists, Triggers: p.Triggers, TracingOn: p.TracingOn, IgnoreTgid: p.IgnoreTgid, CountOwnHits: p.CountOwnHits},
		maps: &Maps{Scratch: p.Scratch},
	}
	if err := e.p.checkTriggers(); err != nil {
		return nil, err
	}
	if p.Ring != nil && p.Switch == nil {
		return nil, fmt.Errorf("fetchargs: compile: a traced static event without its switch")
	}
	if p.Filter != nil {
		if err := CheckFilter(p.Filter); err != nil {
			return nil, err
		}
	}
	e.emit(
		asm.Mov.Reg(rCtx, asm.R1),
		asm.FnGetCurrentPidTgid.Call(),
		asm.StoreMem(asm.R10, stkPidTgid, asm.R0, asm.DWord),
	)
	if p.IgnoreTgid != 0 && !e.p.lateIgnore() && (p.Context == nil || !p.CountOwnHits) {
		// ktrace's own hits end here (when they count in histograms and
		// triggers, only their record is dropped, in staticTail; with
		// Context, the events about other tasks, which ktrace's own
		// thread may be interrupted by, keep their records in interrupts,
		// also in staticTail).
		keep := e.newLabel()
		e.emit(
			asm.RSh.Imm(asm.R0, 32),
			asm.JNE.Imm(asm.R0, int32(p.IgnoreTgid), keep),
			asm.Mov.Imm(asm.R0, 0),
			asm.Return(),
		)
		e.mark(keep)
	}
	e.emit(
		asm.FnGetSmpProcessorId.Call(),
		asm.StoreMem(asm.R10, stkCPU, asm.R0, asm.Word),
	)
	if err := e.cpuScratch(); err != nil {
		return nil, err
	}
	copied := e.newLabel()
	e.emit(
		asm.FnKtimeGetNs.Call(),
		asm.StoreMem(rBuf, 0, asm.R0, asm.DWord),
		asm.LoadMem(asm.R0, asm.R10, stkCPU, asm.Word),
		asm.StoreMem(rBuf, 8, asm.R0, asm.Word),
		asm.Mov.Reg(asm.R1, rBuf),
		asm.Add.Imm(asm.R1, fetchargs.HeaderSize),
		asm.Mov.Imm(asm.R2, int32(p.Size)),
		asm.Mov.Reg(asm.R3, rCtx),
		asm.FnProbeReadKernel.Call(),
		asm.JEq.Imm(asm.R0, 0, copied),
		asm.Mov.Imm(asm.R0, 0),
		asm.Return(),
	)
	e.mark(copied)
	e.recordCommon(p.Type, p.Flags, p.Preempt)
	if p.Context != nil {
		if err := e.cpuContext(p.Context); err != nil {
			return nil, err
		}
	}
	if err := e.staticTail(p); err != nil {
		return nil, err
	}
	return e.program(), nil
}

// staticTail emits what follows a static event's record: its histograms
// and triggers in the kernel's order (see triggers.go) and, when it is
// traced, its record.
func (e *emitter) staticTail(p *TracepointHist) error {
	cond := e.p.condTriggers()
	traced := p.Ring != nil
	if cond && traced {
		if err := e.sampleTracing(); err != nil {
			return err
		}
	}
	if len(p.Hists) > 0 {
		if err := e.histStage(p.Size); err != nil {
			return err
		}
	}
	if cond {
		if err := e.triggers(false, p.Size); err != nil {
			return err
		}
	} else {
		if err := e.allTriggers(p.Size); err != nil {
			return err
		}
		if traced {
			if err := e.sampleTracing(); err != nil {
				return err
			}
		}
	}
	post := e.newLabel()
	if traced {
		if err := e.switchValue(p.Switch, post); err != nil {
			return err
		}
		e.emit(
			asm.JEq.Imm(asm.R1, 0, post),
			asm.LoadMem(asm.R1, asm.R10, stkTracing, asm.DWord),
			asm.JEq.Imm(asm.R1, 0, post),
		)
		if p.Filter != nil {
			if err := e.filterStageTo(p.Filter, p.Size, post); err != nil {
				return err
			}
		}
		if p.IgnoreTgid != 0 && p.Context != nil {
			e.ignoreTgidInTask(p.IgnoreTgid, post)
		} else if p.IgnoreTgid != 0 {
			e.ignoreTgid(p.IgnoreTgid, post)
		}
		e.emit(
			// The static events' header: the read's result (0), the
			// event's number and the task's pid.
			asm.StoreImm(rBuf, 12, 0, asm.Word),
			asm.StoreImm(rBuf, 32, int64(p.Num), asm.Word),
			asm.LoadMem(asm.R1, asm.R10, stkPidTgid, asm.DWord),
			asm.StoreMem(rBuf, 36, asm.R1, asm.Word),
		)
		if err := e.mapPtr(asm.R1, p.Ring); err != nil {
			return err
		}
		e.emit(
			asm.Mov.Reg(asm.R2, rBuf),
			asm.Mov.Imm(asm.R3, int32(SynthHeader+p.Size)),
			asm.Mov.Imm(asm.R4, bpfRbNoWakeup),
			asm.FnRingbufOutput.Call(),
		)
	}
	e.mark(post)
	if cond {
		if err := e.triggers(true, p.Size); err != nil {
			return err
		}
	}
	e.emit(asm.Mov.Imm(asm.R0, 0), asm.Return())
	return nil
}

// MarkerArgs is how many u64 arguments a marker program's context holds
// (CompileMarkerHist).
const MarkerArgs = 2

// CompileMarkerHist returns the program that runs the triggers of the
// trace_marker's event (ftrace/print), which no BPF program can attach
// to: ktrace runs it for each write it takes (BPF_PROG_TEST_RUN of a
// raw tracepoint program). Its context is MarkerArgs u64s: the address,
// in the caller's memory, of a record's header (fetchargs.HeaderSize
// bytes: time, CPU and comm of the writing task) and p.Size bytes of the
// record as the event's format lays it out, then the writer's pid and
// tgid (tgid<<32|pid). As in the kernel, the triggers see the record
// before it is committed: the histograms and the triggers run first
// (snapshot swaps put the record aside), traceoff after. p.Ring must be
// nil: the caller writes the record itself.
func CompileMarkerHist(p *TracepointHist) (asm.Instructions, error) {
	if p.Size <= 0 || p.Size > maxSourceSize {
		return nil, fmt.Errorf("fetchargs: compile: a record of %d bytes", p.Size)
	}
	if p.Ring != nil || p.IgnoreTgid != 0 {
		return nil, fmt.Errorf("fetchargs: compile: a marker program writes no record and ignores no task")
	}
	for _, h := range p.Hists {
		if h.Filter != nil {
			if err := CheckFilter(h.Filter); err != nil {
				return nil, err
			}
		}
	}
	e := &emitter{
		p:    &ProbeProgram{ScratchSize: p.ScratchSize, Hists: p.Hists, Triggers: p.Triggers, TracingOn: p.TracingOn, Marker: true},
		maps: &Maps{Scratch: p.Scratch},
	}
	if err := e.p.checkTriggers(); err != nil {
		return nil, err
	}
	for _, t := range p.Triggers {
		if t.Kind == Stacktrace {
			// The stack would be the caller's, not the writer's.
			return nil, fmt.Errorf("stacktrace on a trace_marker write: %w", ErrHistUnsupported)
		}
	}
	copied := e.newLabel()
	e.emit(
		asm.Mov.Reg(rCtx, asm.R1),
		asm.LoadMem(asm.R0, rCtx, 8, asm.DWord),
		asm.StoreMem(asm.R10, stkPidTgid, asm.R0, asm.DWord),
		// The scratch value of the CPU the program runs on.
		asm.FnGetSmpProcessorId.Call(),
		asm.StoreMem(asm.R10, stkCPU, asm.R0, asm.Word),
	)
	if err := e.cpuScratch(); err != nil {
		return nil, err
	}
	e.emit(
		asm.Mov.Reg(asm.R1, rBuf),
		asm.Mov.Imm(asm.R2, int32(fetchargs.HeaderSize+p.Size)),
		asm.LoadMem(asm.R3, rCtx, 0, asm.DWord),
		asm.FnProbeReadUser.Call(),
		asm.JEq.Imm(asm.R0, 0, copied),
		asm.Mov.Imm(asm.R0, 0),
		asm.Return(),
	)
	e.mark(copied)
	if err := e.staticTail(p); err != nil {
		return nil, err
	}
	return e.program(), nil
}

// StaticCopy describes the program that traces a static event with no
// filter or trigger of its own: a BPF tracepoint program, shared by the
// events whose records fit Size bytes, that copies the record the perf
// path gives it into Ring after a SynthHeader-format header (time, CPU,
// bpf_probe_read_kernel's result, comm, the attach cookie, the pid).
type StaticCopy struct {
	Ring asm.FDer
	// TracingOn, when set, is tracing_on (one u32): 0 records nothing.
	TracingOn asm.FDer
	Size      int
	// IgnoreTgid is a process whose hits are not traced (the tracer).
	IgnoreTgid uint32
	// Flags is the record's common_flags where the program does not
	// read them (its irqs-off bit where Context finds no interrupt
	// flag).
	Flags uint8
	// Context, when set, has the record's flags and preempt count read
	// from the CPU's preempt count, as the kernel's record of the event
	// has them; otherwise they are left as the perf path left them.
	Context *CPUContext
	Arch    *kernel.Arch
}

// CompileStaticCopy returns the program of p.
func CompileStaticCopy(p *StaticCopy) (asm.Instructions, error) {
	if p.Size <= 0 || p.Size > maxSourceSize {
		return nil, fmt.Errorf("fetchargs: compile: a record of %d bytes", p.Size)
	}
	e := &emitter{p: &ProbeProgram{Arch: p.Arch}, reserve: true}
	out := e.newLabel()
	e.emit(
		asm.Mov.Reg(rCtx, asm.R1),
		asm.FnGetCurrentPidTgid.Call(),
		asm.StoreMem(asm.R10, stkPidTgid, asm.R0, asm.DWord),
	)
	if p.IgnoreTgid != 0 && p.Context == nil {
		// The tracer's own events: its reading of the ring would
		// otherwise feed the ring. (With Context, only those in task
		// context, once the record tells, below.)
		e.emit(
			asm.RSh.Imm(asm.R0, 32),
			asm.JEq.Imm(asm.R0, int32(p.IgnoreTgid), out),
		)
	}
	if p.TracingOn != nil {
		// tracing_on 0: no record.
		reserve := e.newLabel()
		e.emit(asm.StoreImm(asm.R10, stkKey, 0, asm.Word))
		if err := e.lookup(p.TracingOn, stkKey); err != nil {
			return nil, err
		}
		e.emit(
			asm.JEq.Imm(asm.R0, 0, reserve),
			asm.LoadMem(asm.R1, asm.R0, 0, asm.Word),
			asm.JEq.Imm(asm.R1, 0, out),
		)
		e.mark(reserve)
	}
	if err := e.mapPtr(asm.R1, p.Ring); err != nil {
		return nil, err
	}
	e.emit(
		asm.Mov.Imm(asm.R2, int32(SynthHeader+p.Size)),
		asm.Mov.Imm(asm.R3, 0),
		asm.FnRingbufReserve.Call(),
		asm.JEq.Imm(asm.R0, 0, out),
		asm.Mov.Reg(rBuf, asm.R0),
		asm.FnKtimeGetNs.Call(),
		asm.StoreMem(rBuf, 0, asm.R0, asm.DWord),
		asm.FnGetSmpProcessorId.Call(),
		asm.StoreMem(rBuf, 8, asm.R0, asm.Word),
		asm.StoreMem(asm.R10, stkCPU, asm.R0, asm.Word),
		asm.LoadMem(asm.R1, asm.R10, stkPidTgid, asm.DWord),
		asm.StoreMem(rBuf, 36, asm.R1, asm.Word),
		asm.Mov.Reg(asm.R1, rCtx),
		asm.FnGetAttachCookie.Call(),
		asm.StoreMem(rBuf, 32, asm.R0, asm.Word),
		asm.Mov.Reg(asm.R1, rBuf),
		asm.Add.Imm(asm.R1, 16),
		asm.Mov.Imm(asm.R2, 16),
		asm.FnGetCurrentComm.Call(),
		asm.Mov.Reg(asm.R1, rBuf),
		asm.Add.Imm(asm.R1, SynthHeader),
		asm.Mov.Imm(asm.R2, int32(p.Size)),
		asm.Mov.Reg(asm.R3, rCtx),
		asm.FnProbeReadKernel.Call(),
		asm.StoreMem(rBuf, 12, asm.R0, asm.Word),
	)
	if p.Context != nil {
		e.emit(asm.StoreImm(rBuf, recOff(2), int64(p.Flags), asm.Half))
		if err := e.cpuContext(p.Context); err != nil {
			return nil, err
		}
		if p.IgnoreTgid != 0 {
			// The tracer's own hits in task context are dropped; in an
			// interrupt that came upon its thread they are not its
			// doing, and the kernel records them.
			discard := e.newLabel()
			e.ignoreTgidInTask(p.IgnoreTgid, discard)
			submit := e.newLabel()
			e.emit(asm.Ja.Label(submit))
			e.mark(discard)
			e.emit(
				asm.Mov.Reg(asm.R1, rBuf),
				asm.Mov.Imm(asm.R2, bpfRbNoWakeup),
				asm.FnRingbufDiscard.Call(),
				asm.Ja.Label(out),
			)
			e.mark(submit)
		}
	}
	e.emit(
		asm.Mov.Reg(asm.R1, rBuf),
		// No wake-up: the reader polls. Waking it for each record
		// would make it trace itself into a loop when every event is
		// enabled: each wake-up schedules, which fires scheduler and
		// timer events, which wake it again.
		asm.Mov.Imm(asm.R2, bpfRbNoWakeup),
		asm.FnRingbufSubmit.Call(),
	)
	e.mark(out)
	e.emit(asm.Mov.Imm(asm.R0, 0), asm.Return())
	return e.program(), nil
}
