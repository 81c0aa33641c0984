package bpfcode

import (
	"fmt"

	"github.com/cilium/ebpf/asm"

	"github.com/ktrace-dev/ktrace/filter"
)

// The trigger commands other than hist, run where the event happens as the
// kernel's event_triggers_call runs them:
//
//   - when no trigger of the event needs its record (none has a filter and
//     the event has no histogram), every trigger runs before the record,
//     so a traceoff stops the very hit that fired it;
//   - otherwise the record is built first, and whether tracing is on is
//     decided then (the reserve in the kernel's ring buffer); the
//     triggers then run in order, each when its filter passes, and the
//     post triggers (traceoff) after the record is written or dropped.
//
// A trigger's count (":N") lives in a map: it goes down each time the
// trigger changes something, and at 0 the trigger stops acting.

// TriggerKind is a trigger command.
type TriggerKind int

// Trigger commands the programs run.
const (
	TraceOn TriggerKind = iota + 1
	TraceOff
	EnableEvent
	DisableEvent
	EnableHist
	DisableHist
	Snapshot
	Stacktrace
)

// StackFrames is how many return addresses a stacktrace trigger's record
// holds (the kernel's trace stack entries hold no more than this either
// in practice: its own limit is larger, its stacks far shorter).
const StackFrames = 64

// StackRecordSize is a stacktrace trigger's record in its ring: the
// static events' header (SynthHeader bytes: time, CPU, the stack's size
// in bytes where a static record has the read's result, comm, number,
// pid), then StackFrames addresses, innermost first.
const StackRecordSize = SynthHeader + 8*StackFrames

// StackTriggerRecordSize is a stacktrace trigger's record: a
// StackRecordSize one, then at StackFlagsOff the triggering record's
// common_flags and common_preempt_count, which the kernel's stack entry
// takes (a syscall event's "...1.", a kprobe's "....."), in 8 bytes.
const (
	StackFlagsOff          = StackRecordSize
	StackTriggerRecordSize = StackRecordSize + 8
)

// A static event's program (ProbeProgram.TracepointCtx) writes its stack
// record in two parts: the task's stack in the first StackTopFrames
// slots, for the tracing code's frames down to perf_trace_CLASS, and
// bpf_get_stack's of its context in the others, from that function's
// caller on. The size word then holds StackSplit, the first part's bytes
// in its low 16 bits and the second's from bit 16.
const (
	StackTopFrames = 16
	StackSplit     = 1 << 30
)

// SnapshotRecordSize is a value of a snapshot trigger's queue (Queue):
// the swap's time (u64, the records' clock), the task's pid (u32) and
// CPU (u32), and its comm (16 bytes).
const SnapshotRecordSize = 32

// post reports the commands that run after the record
// (EVENT_CMD_FL_POST_TRIGGER).
func (k TriggerKind) post() bool { return k == TraceOff }

// EventTrigger is one trigger command of an event.
type EventTrigger struct {
	Kind TriggerKind
	// Filter is the trigger's "if" filter (nil: none).
	Filter *filter.Filter
	// Count is a BPF_MAP_TYPE_ARRAY of one u64: how many more times the
	// trigger acts (^0: unlimited). Nil: unlimited.
	Count asm.FDer
	// Target is the trace switch of the event an enable_event or
	// disable_event trigger turns on or off (a BPF_MAP_TYPE_ARRAY of one
	// u32).
	Target asm.FDer
	// Pauses are the pause switches (Hist.Pause) of the histograms of
	// the event an enable_hist or disable_hist trigger acts on.
	Pauses []asm.FDer
	// Ring and Num are where a stacktrace trigger writes the task's
	// kernel stack: a ring buffer the static events' reader reads, and
	// the number its records carry (StackRecordSize).
	Ring asm.FDer
	Num  uint32
	// Queue is where a snapshot trigger says it fired: a
	// BPF_MAP_TYPE_QUEUE of SnapshotRecordSize values, which user space
	// turns into the swap of its trace buffers. The time is the record's
	// own when the trigger runs before it (the record goes into the
	// buffer swapped in), just after it otherwise (the record was
	// reserved in the buffer the swap puts aside).
	Queue asm.FDer
}

// stkTracing keeps whether tracing was on when the record was decided.
const stkTracing = -112

// checkTriggers reports whether the program can run p's triggers.
func (p *ProbeProgram) checkTriggers() error {
	for _, t := range p.Triggers {
		switch t.Kind {
		case TraceOn, TraceOff:
			if p.TracingOn == nil {
				return fmt.Errorf("traceon/traceoff without the tracing switch: %w", ErrHistUnsupported)
			}
		case EnableEvent, DisableEvent:
			if t.Target == nil {
				return fmt.Errorf("enable_event/disable_event without its target's switch: %w", ErrHistUnsupported)
			}
		case Snapshot:
			if t.Queue == nil {
				return fmt.Errorf("snapshot without its queue: %w", ErrHistUnsupported)
			}
		case Stacktrace:
			if t.Ring == nil {
				return fmt.Errorf("stacktrace without its ring buffer: %w", ErrHistUnsupported)
			}
		case EnableHist, DisableHist:
			for _, m := range t.Pauses {
				if m == nil {
					return fmt.Errorf("enable_hist/disable_hist without a histogram's pause switch: %w", ErrHistUnsupported)
				}
			}
		default:
			return fmt.Errorf("trigger kind %d: %w", t.Kind, ErrHistUnsupported)
		}
		if t.Filter != nil {
			if err := CheckFilter(t.Filter); err != nil {
				return err
			}
		}
	}
	return nil
}

// condTriggers reports whether the event's triggers need its record.
func (p *ProbeProgram) condTriggers() bool {
	if len(p.Hists) > 0 || p.Marker {
		return true
	}
	for _, t := range p.Triggers {
		if t.Filter != nil {
			return true
		}
	}
	return false
}

// sampleTracing stores at stkTracing whether tracing is on (1 without a
// tracing switch).
func (e *emitter) sampleTracing() error {
	e.emit(asm.Mov.Imm(asm.R1, 1), asm.StoreMem(asm.R10, stkTracing, asm.R1, asm.DWord))
	if e.p.TracingOn == nil {
		return nil
	}
	none := e.newLabel()
	if err := e.switchValue(e.p.TracingOn, none); err != nil {
		return err
	}
	e.emit(asm.StoreMem(asm.R10, stkTracing, asm.R1, asm.DWord))
	e.mark(none)
	return nil
}

// allTriggers runs every trigger of the event in list order (none needs
// the record: all run before it).
func (e *emitter) allTriggers(size int) error {
	for _, t := range e.p.Triggers {
		if err := e.trigger(t, size); err != nil {
			return err
		}
	}
	return nil
}

// triggers runs the event's triggers whose post() is post, in order.
// size is the record's size (for the triggers' filters).
func (e *emitter) triggers(post bool, size int) error {
	for _, t := range e.p.Triggers {
		if t.Kind.post() != post {
			continue
		}
		if err := e.trigger(t, size); err != nil {
			return err
		}
	}
	return nil
}

// trigger emits one trigger: its filter, the state test (nothing to do
// when the switch is already as the trigger would set it), the count,
// and the switch.
func (e *emitter) trigger(t *EventTrigger, size int) error {
	skip := e.newLabel()
	if t.Filter != nil {
		if err := e.filterStageTo(t.Filter, size, skip); err != nil {
			return err
		}
	}
	if t.Kind == Snapshot || t.Kind == Stacktrace {
		if err := e.triggerCount(t, skip); err != nil {
			return err
		}
		var err error
		if t.Kind == Snapshot {
			err = e.pushSnapshot(t.Queue)
		} else {
			err = e.stackRecord(t)
		}
		if err != nil {
			return err
		}
		e.mark(skip)
		return nil
	}
	if t.Kind == EnableHist || t.Kind == DisableHist {
		// hist_enable_count_trigger: the count, then every histogram
		// of the target paused or not, whatever it was.
		if err := e.triggerCount(t, skip); err != nil {
			return err
		}
		paused := int64(0)
		if t.Kind == DisableHist {
			paused = 1
		}
		for _, m := range t.Pauses {
			e.emit(asm.StoreImm(asm.R10, stkKey, 0, asm.Word))
			if err := e.lookup(m, stkKey); err != nil {
				return err
			}
			none := e.newLabel()
			e.emit(
				asm.JEq.Imm(asm.R0, 0, none),
				asm.StoreImm(asm.R0, 0, paused, asm.Word),
			)
			e.mark(none)
		}
		e.mark(skip)
		return nil
	}
	sw, want := e.p.TracingOn, int32(1)
	switch t.Kind {
	case TraceOff:
		want = 0
	case EnableEvent:
		sw = t.Target
	case DisableEvent:
		sw, want = t.Target, 0
	}
	if err := e.switchValue(sw, skip); err != nil {
		return err
	}
	isOn := e.newLabel()
	e.emit(
		asm.Mov.Reg(rVal, asm.R0),
		asm.Mov.Imm(asm.R2, 0),
		asm.JEq.Imm(asm.R1, 0, isOn),
		asm.Mov.Imm(asm.R2, 1),
	)
	e.mark(isOn)
	e.emit(asm.JEq.Imm(asm.R2, want, skip))
	if err := e.triggerCount(t, skip); err != nil {
		return err
	}
	e.emit(asm.StoreImm(rVal, 0, int64(want), asm.Word))
	e.mark(skip)
	return nil
}

// triggerCount jumps to skip when the trigger's count is used up, else
// takes one from it (an unlimited one stays as it is). stkKey is 0.
func (e *emitter) triggerCount(t *EventTrigger, skip string) error {
	if t.Count == nil {
		return nil
	}
	e.emit(asm.StoreImm(asm.R10, stkKey, 0, asm.Word))
	if err := e.lookup(t.Count, stkKey); err != nil {
		return err
	}
	unlimited := e.newLabel()
	e.emit(
		asm.JEq.Imm(asm.R0, 0, skip),
		asm.LoadMem(asm.R1, asm.R0, 0, asm.DWord),
		asm.JEq.Imm(asm.R1, 0, skip),
		asm.JEq.Imm(asm.R1, -1, unlimited),
		asm.Add.Imm(asm.R1, -1),
		asm.StoreMem(asm.R0, 0, asm.R1, asm.DWord),
	)
	e.mark(unlimited)
	return nil
}

// pushSnapshot pushes the swap's time, pid, CPU and comm (stkKeyB..stkKey,
// 32 bytes) onto a snapshot queue. The record's time is at rBuf+0.
func (e *emitter) pushSnapshot(queue asm.FDer) error {
	e.emit(asm.LoadMem(asm.R1, rBuf, 0, asm.DWord))
	if e.p.condTriggers() {
		// The record was decided before the triggers ran.
		e.emit(asm.Add.Imm(asm.R1, 1))
	}
	e.emit(
		asm.StoreMem(asm.R10, stkKeyB, asm.R1, asm.DWord),
		asm.LoadMem(asm.R1, asm.R10, stkPidTgid, asm.DWord),
		asm.StoreMem(asm.R10, stkKeyB+8, asm.R1, asm.Word),
	)
	if e.p.Marker {
		// The writer's CPU and comm, from the record's header.
		e.emit(
			asm.LoadMem(asm.R1, rBuf, 8, asm.Word),
			asm.StoreMem(asm.R10, stkKeyB+12, asm.R1, asm.Word),
			asm.LoadMem(asm.R1, rBuf, 16, asm.DWord),
			asm.StoreMem(asm.R10, stkKeyA, asm.R1, asm.DWord),
			asm.LoadMem(asm.R1, rBuf, 24, asm.DWord),
			asm.StoreMem(asm.R10, stkKeyA+8, asm.R1, asm.DWord),
		)
	} else {
		e.emit(
			asm.LoadMem(asm.R1, asm.R10, stkCPU, asm.Word),
			asm.StoreMem(asm.R10, stkKeyB+12, asm.R1, asm.Word),
			asm.Mov.Reg(asm.R1, asm.R10),
			asm.Add.Imm(asm.R1, stkKeyA),
			asm.Mov.Imm(asm.R2, 16),
			asm.FnGetCurrentComm.Call(),
		)
	}
	if err := e.mapPtr(asm.R1, queue); err != nil {
		return err
	}
	e.emit(
		asm.Mov.Reg(asm.R2, asm.R10),
		asm.Add.Imm(asm.R2, stkKeyB),
		asm.Mov.Imm(asm.R3, 0),
		asm.FnMapPushElem.Call(),
	)
	return nil
}

// lateIgnore reports whether ktrace's own hits (IgnoreTgid) go through the
// event's histograms and triggers, and only their record is dropped
// (CountOwnHits).
func (p *ProbeProgram) lateIgnore() bool {
	return p.CountOwnHits && (len(p.Hists) > 0 || len(p.Triggers) > 0)
}

// ignoreTgid jumps to skip when the hit is in process tgid (ktrace's
// own), from the pid and tgid kept at stkPidTgid.
func (e *emitter) ignoreTgid(tgid uint32, skip string) {
	e.emit(
		asm.LoadMem(asm.R1, asm.R10, stkPidTgid, asm.DWord),
		asm.RSh.Imm(asm.R1, 32),
		asm.JEq.Imm(asm.R1, int32(tgid), skip),
	)
}

// ownInTask reports whether the program tells ktrace's own hits in task
// context from those in interrupts that came upon its threads, which are
// not its doing and which the kernel records: where it reads the
// record's context from the CPU (Context; not event probes or uprobes).
func (p *ProbeProgram) ownInTask() bool {
	return p.IgnoreTgid != 0 && p.Context != nil && !p.EventRecord && !p.User
}

// ignoreTgidInTask is ignoreTgid for a hit in task context only: a hit
// in a hardirq, a softirq or an NMI that interrupted tgid is not tgid's
// doing, and the kernel records it (the record's flags at recOff(2), as
// cpuContext wrote them, tell).
func (e *emitter) ignoreTgidInTask(tgid uint32, skip string) {
	keep := e.newLabel()
	e.emit(
		asm.LoadMem(asm.R1, asm.R10, stkPidTgid, asm.DWord),
		asm.RSh.Imm(asm.R1, 32),
		asm.JNE.Imm(asm.R1, int32(tgid), keep),
		asm.LoadMem(asm.R1, rBuf, recOff(2), asm.Byte),
		asm.And.Imm(asm.R1, InterruptFlags),
		asm.JEq.Imm(asm.R1, 0, skip),
	)
	e.mark(keep)
}

// stackRecord writes the task's kernel stack to the trigger's ring
// (StackRecordSize): the kernel's __trace_stack. The stack is the task's
// as it is now, the tracing code's frames on top (the reader shows the
// ones the kernel's own tracer would have). Its time puts it before the
// record when the triggers run first, after it otherwise, as the
// kernel's stack entry falls.
func (e *emitter) stackRecord(t *EventTrigger) error {
	done := e.newLabel()
	if e.p.IgnoreTgid != 0 {
		// ktrace's own hit: its stack is ktrace's doing, not the
		// traced system's, and stays out of the trace as its record.
		e.ignoreTgid(e.p.IgnoreTgid, done)
	}
	if err := e.mapPtr(asm.R1, t.Ring); err != nil {
		return err
	}
	e.emit(
		asm.Mov.Imm(asm.R2, StackTriggerRecordSize),
		asm.Mov.Imm(asm.R3, 0),
		asm.FnRingbufReserve.Call(),
		asm.JEq.Imm(asm.R0, 0, done),
		asm.StoreMem(asm.R10, stkSaveStack, asm.R0, asm.DWord),
		zeroDWord(asm.R0, StackFlagsOff),
		asm.LoadMem(asm.R1, rBuf, recOff(2), asm.Half),
		asm.StoreMem(asm.R0, StackFlagsOff, asm.R1, asm.Half),
		asm.LoadMem(asm.R1, rBuf, 0, asm.DWord),
	)
	if e.p.condTriggers() {
		e.emit(asm.Add.Imm(asm.R1, 1))
	} else {
		e.emit(asm.Add.Imm(asm.R1, -1))
	}
	e.emit(
		asm.StoreMem(asm.R0, 0, asm.R1, asm.DWord),
		asm.LoadMem(asm.R1, asm.R10, stkCPU, asm.Word),
		asm.StoreMem(asm.R0, 8, asm.R1, asm.Word),
		asm.StoreImm(asm.R0, 32, int64(t.Num), asm.Word),
		asm.LoadMem(asm.R1, asm.R10, stkPidTgid, asm.DWord),
		asm.StoreMem(asm.R0, 36, asm.R1, asm.Word),
		asm.Mov.Reg(asm.R1, asm.R0),
		asm.Add.Imm(asm.R1, 16),
		asm.Mov.Imm(asm.R2, 16),
		asm.FnGetCurrentComm.Call(),
	)
	top := int32(StackFrames)
	if e.p.TracepointCtx {
		top = StackTopFrames
	}
	e.emit(
		asm.FnGetCurrentTaskBtf.Call(),
		asm.Mov.Reg(asm.R1, asm.R0),
		asm.LoadMem(asm.R2, asm.R10, stkSaveStack, asm.DWord),
		asm.Add.Imm(asm.R2, SynthHeader),
		asm.Mov.Imm(asm.R3, 8*top),
		asm.Mov.Imm(asm.R4, 0),
		asm.FnGetTaskStack.Call(),
		asm.LoadMem(asm.R1, asm.R10, stkSaveStack, asm.DWord),
		asm.StoreMem(asm.R1, 12, asm.R0, asm.Word),
	)
	if e.p.TracepointCtx {
		// The task's stack gave the tracing code's frames down to
		// perf_trace_CLASS; the context's, from the caller of that
		// one, the rest, whole (kernelStack).
		topOK, restOK := e.newLabel(), e.newLabel()
		e.emit(
			asm.JSGE.Imm(asm.R0, 0, topOK),
			asm.StoreImm(asm.R1, 12, 0, asm.Word),
		)
		e.mark(topOK)
		e.emit(asm.LoadMem(rTmp9, asm.R10, stkSaveStack, asm.DWord))
		e.kernelStack(rTmp9, SynthHeader+8*StackTopFrames, 8*(StackFrames-StackTopFrames))
		e.emit(
			asm.JSGE.Imm(asm.R0, 0, restOK),
			asm.Mov.Imm(asm.R0, 0),
		)
		e.mark(restOK)
		e.emit(
			asm.LoadMem(asm.R1, asm.R10, stkSaveStack, asm.DWord),
			asm.LSh.Imm(asm.R0, 16),
			asm.Or.Imm(asm.R0, StackSplit),
			asm.LoadMem(asm.R2, asm.R1, 12, asm.Word),
			asm.Or.Reg(asm.R0, asm.R2),
			asm.StoreMem(asm.R1, 12, asm.R0, asm.Word),
		)
	}
	e.emit(
		asm.LoadMem(asm.R1, asm.R10, stkSaveStack, asm.DWord),
		asm.Mov.Imm(asm.R2, 0),
		asm.FnRingbufSubmit.Call(),
	)
	e.mark(done)
	return nil
}

// stkSaveStack keeps a stacktrace trigger's reserved record.
const stkSaveStack = -128
