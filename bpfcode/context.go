package bpfcode

import (
	"fmt"

	"github.com/cilium/ebpf/asm"

	"github.com/ktrace-dev/ktrace/kernel"
)

// CPUContext tells a program where the running CPU's preempt count is, so
// that its record's common_flags and common_preempt_count describe the
// context of the hit as the kernel's own record of the event does
// (tracing_gen_ctx): hardirq, softirq, NMI, bottom halves off, the
// preemption depth and the two need-resched flags.
type CPUContext struct {
	// PerCPUOffsets is the address of __per_cpu_offset; Offset the
	// count's place in a CPU's per-CPU area (kernel.PreemptCount).
	PerCPUOffsets, Offset uint64
	// Dec takes one from the depth as tracing_gen_ctx_dec does: the
	// kernel's record of a kprobe, a kretprobe or an fprobe discounts
	// the preempt_disable of the path that called it, which the
	// program's path shares. A tracepoint probe's record does not.
	Dec bool
	// Inc adds one to the depth: an event probe's record on a system
	// call's event, which is one deeper than the syscall's own record
	// (taken without the decrement).
	Inc bool
	// IrqState, for a static event's program (which has no registers to
	// read the interrupt flag from), is the map IrqStateProgram fills:
	// the record's irqs-off bit is the one taken where the perf path
	// handed that very record to BPF, and, where no such entry is found,
	// the bit already in the record. Either way a hit in a hardirq or an
	// NMI, which x86 runs with interrupts off, has it set.
	IrqState asm.FDer
}

// IrqStateSlots and IrqStateValueSize describe the map of
// CPUContext.IrqState: a BPF_MAP_TYPE_PERCPU_ARRAY with an entry per
// perf recursion context (task, softirq, hardirq, NMI), each the record's
// address (u64) and its irqs-off bit (u64).
const (
	IrqStateSlots     = 4
	IrqStateValueSize = 16
)

// IrqStateFunction is the kernel function IrqStateProgram is attached to:
// every static event's perf path calls it with the record before the
// tracepoint's BPF programs run (perf_trace_run_bpf_submit(raw_data,
// size, rctx, ...)).
const IrqStateFunction = "perf_trace_run_bpf_submit"

// IrqStateProgram returns the kprobe program, for IrqStateFunction's
// entry, that writes into slots (CPUContext.IrqState) the record's
// address and whether interrupts were off there: the kernel's own record
// of the event takes the interrupt flag at that point, and a tracepoint
// program cannot read it.
func IrqStateProgram(arch *kernel.Arch, slots asm.FDer) (asm.Instructions, error) {
	if arch == nil || arch.Name != "x86_64" || len(arch.ArgRegs) < 3 {
		return nil, fmt.Errorf("bpfcode: the interrupt flag is read on x86_64 only")
	}
	flags, ok := arch.Regs["flags"]
	rec, ok1 := arch.Regs[arch.ArgRegs[0]]
	rctx, ok2 := arch.Regs[arch.ArgRegs[2]]
	if !ok || !ok1 || !ok2 {
		return nil, fmt.Errorf("bpfcode: the registers' layout lacks flags or an argument register")
	}
	e := &emitter{p: &ProbeProgram{Arch: arch}}
	e.emit(
		asm.Mov.Reg(rCtx, asm.R1),
		asm.LoadMem(asm.R1, rCtx, int16(rctx), asm.DWord),
		asm.And.Imm(asm.R1, IrqStateSlots-1),
		asm.StoreMem(asm.R10, stkKey, asm.R1, asm.Word),
		asm.LoadMem(asm.R1, rCtx, int16(rec), asm.DWord),
		asm.StoreMem(asm.R10, stkKeyA, asm.R1, asm.DWord),
		// TRACE_FLAG_IRQS_OFF when EFLAGS.IF (bit 9) is clear.
		asm.LoadMem(asm.R1, rCtx, int16(flags), asm.DWord),
		asm.RSh.Imm(asm.R1, 9),
		asm.And.Imm(asm.R1, 1),
		asm.Xor.Imm(asm.R1, 1),
		asm.StoreMem(asm.R10, stkKeyA+8, asm.R1, asm.DWord),
	)
	if err := e.mapPtr(asm.R1, slots); err != nil {
		return nil, err
	}
	e.emit(
		asm.Mov.Reg(asm.R2, asm.R10),
		asm.Add.Imm(asm.R2, stkKey),
		asm.Mov.Reg(asm.R3, asm.R10),
		asm.Add.Imm(asm.R3, stkKeyA),
		asm.Mov.Imm(asm.R4, 0),
		asm.FnMapUpdateElem.Call(),
		asm.Mov.Imm(asm.R0, 0),
		asm.Return(),
	)
	return e.program(), nil
}

// irqStateFlag sets the record's irqs-off bit from the IrqState entry
// of the record the program was given (rCtx), when there is one, and
// empties that entry: an entry serves the one record it was taken for.
func (e *emitter) irqStateFlag(slots asm.FDer, off int16) error {
	found := e.newLabel()
	for i := 0; i < IrqStateSlots; i++ {
		next := e.newLabel()
		e.emit(asm.StoreImm(asm.R10, stkKey, int64(i), asm.Word))
		if err := e.lookup(slots, stkKey); err != nil {
			return err
		}
		e.emit(
			asm.JEq.Imm(asm.R0, 0, next),
			asm.LoadMem(asm.R1, asm.R0, 0, asm.DWord),
			asm.JNE.Reg(asm.R1, rCtx, next),
			zeroDWord(asm.R0, 0),
			asm.LoadMem(asm.R1, asm.R0, 8, asm.DWord),
			asm.StoreMem(rBuf, off, asm.R1, asm.Byte),
			asm.Ja.Label(found),
		)
		e.mark(next)
	}
	e.mark(found)
	return nil
}

// The preempt count's fields (include/linux/preempt.h) and x86's
// inverted need-resched bit in it.
const (
	pcSoftirqMask   = 0x0000ff00
	pcSoftirqOffset = 0x00000100
	pcHardirqMask   = 0x000f0000
	pcNMIMask       = 0x00f00000
	pcNeedResched   = 0x80000000
	// tifNeedResched is x86's TIF_NEED_RESCHED, a bit of the task's
	// thread_info flags (the first word of its task_struct).
	tifNeedResched = 3
)

// The record's TRACE_FLAG_* bits (include/linux/trace_events.h).
const (
	traceFlagIrqsOff        = 0x01
	traceFlagNeedResched    = 0x04
	traceFlagHardirq        = 0x08
	traceFlagSoftirq        = 0x10
	traceFlagPreemptResched = 0x20
	traceFlagNMI            = 0x40
	traceFlagBHOff          = 0x80
)

// InterruptFlags are the common_flags bits of a record taken in a
// hardirq, a softirq or an NMI.
const InterruptFlags = traceFlagHardirq | traceFlagSoftirq | traceFlagNMI

// InInterrupt reports whether a record's common_flags say it was taken
// in a hardirq, a softirq or an NMI: not the doing of the task it came
// upon.
func InInterrupt(flags uint8) bool { return flags&InterruptFlags != 0 }

// cpuContext completes the record's common_flags (whose irqs-off bit is
// already at recOff(2)) and writes its common_preempt_count from the
// running CPU's preempt count and the task's need-resched flag, as
// tracing_gen_ctx_irq_test and, with Dec, tracing_gen_ctx_dec compute
// them: the depth is capped at 15, the migrate-disable count left 0, and
// Dec's subtraction borrows from the flags when the depth is 0, as the
// kernel's does. A count or flag that cannot be read reads as 0.
func (e *emitter) cpuContext(c *CPUContext) error {
	return e.cpuContextAt(c, recOff(2))
}

// ContextAt returns cpuContext's instructions for a program written by
// hand: the record at R7 has its flags byte (irqs-off bit set) at off and
// gets its preempt count at off+1; the CPU's number is at R10-80, R6 the
// program's context; R8 and R10-8 are used.
func ContextAt(c *CPUContext, arch *kernel.Arch, off int16) (asm.Instructions, error) {
	e := &emitter{p: &ProbeProgram{Arch: arch}, prefix: "ctx"}
	if err := e.cpuContextAt(c, off); err != nil {
		return nil, err
	}
	return e.ins, nil
}

// cpuContextAt is cpuContext for the flags byte at off from rBuf.
func (e *emitter) cpuContextAt(c *CPUContext, off int16) error {
	if c.IrqState != nil {
		if err := e.irqStateFlag(c.IrqState, off); err != nil {
			return err
		}
	}
	// rVal is free until the probe's fields are fetched.
	noResched := e.newLabel()
	e.emit(
		// The task's thread_info flags: TIF_NEED_RESCHED.
		asm.FnGetCurrentTask.Call(),
		asm.Mov.Reg(rVal, asm.R0),
	)
	e.readWord(0, false, "")
	e.emit(
		asm.RSh.Imm(rVal, tifNeedResched),
		asm.And.Imm(rVal, 1),
		asm.JEq.Imm(rVal, 0, noResched),
		asm.LoadMem(asm.R1, rBuf, off, asm.Byte),
		asm.Or.Imm(asm.R1, traceFlagNeedResched),
		asm.StoreMem(rBuf, off, asm.R1, asm.Byte),
	)
	e.mark(noResched)
	// This CPU's per-CPU base, then its preempt count (the low half of
	// the word read).
	e.emit(
		asm.LoadMem(rVal, asm.R10, stkCPU, asm.Word),
		asm.LSh.Imm(rVal, 3),
	)
	e.addImm64(rVal, int64(c.PerCPUOffsets))
	e.readWord(0, false, "")
	e.readWord(int64(c.Offset), false, "")
	e.emit(
		// R3: the raw count, R2: the flags, R4 a test.
		asm.Mov.Reg32(asm.R3, rVal),
		asm.LoadMem(asm.R2, rBuf, off, asm.Byte),
	)
	bit := func(mask int32, flag int32) {
		skip := e.newLabel()
		e.emit(
			asm.Mov.Reg(asm.R4, asm.R3),
			asm.And.Imm(asm.R4, mask),
			asm.JEq.Imm(asm.R4, 0, skip),
			asm.Or.Imm(asm.R2, flag),
		)
		e.mark(skip)
	}
	bit(pcNMIMask, traceFlagNMI)
	bit(pcHardirqMask, traceFlagHardirq)
	// x86 runs hardirqs and NMIs with interrupts off: where the flag
	// could not be read (a tracepoint's program with no IrqState entry),
	// that much is known.
	bit(pcNMIMask|pcHardirqMask, traceFlagIrqsOff)
	bit(pcSoftirqOffset, traceFlagSoftirq)
	bit(pcSoftirqMask&^pcSoftirqOffset, traceFlagBHOff)
	// x86 keeps PREEMPT_NEED_RESCHED inverted: set when clear.
	resched := e.newLabel()
	e.emit(
		asm.Mov.Reg(asm.R4, asm.R3),
		asm.RSh.Imm(asm.R4, 31),
		asm.JNE.Imm(asm.R4, 0, resched),
		asm.Or.Imm(asm.R2, traceFlagPreemptResched),
	)
	e.mark(resched)
	capped := e.newLabel()
	e.emit(
		asm.And.Imm(asm.R3, 0xff),
		asm.JLE.Imm(asm.R3, 15, capped),
		asm.Mov.Imm(asm.R3, 15),
	)
	e.mark(capped)
	e.emit(
		asm.LSh.Imm(asm.R2, 16),
		asm.Or.Reg(asm.R2, asm.R3),
	)
	if c.Dec {
		e.emit(asm.Sub.Imm32(asm.R2, 1))
	}
	if c.Inc {
		e.emit(asm.Add.Imm32(asm.R2, 1))
	}
	e.emit(
		asm.StoreMem(rBuf, off+1, asm.R2, asm.Byte),
		asm.RSh.Imm32(asm.R2, 16),
		asm.StoreMem(rBuf, off, asm.R2, asm.Byte),
	)
	return nil
}
