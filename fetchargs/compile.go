package fetchargs

import (
	"errors"
	"fmt"

	"github.com/cilium/ebpf/asm"

	"github.com/ktrace-dev/ktrace/kernel"
)

// This file compiles a probe's fetch programs (Arg.Ops) into one eBPF
// program of type BPF_PROG_TYPE_KPROBE that writes the event's record (see
// compile_layout.go) and sends it through a BPF ring buffer.
//
// Runtime behaviour, matching the kernel's trace_probe_tmpl.h where eBPF
// allows:
//   - A failed dereference (DEREF/UDEREF) aborts the argument: a number
//     field reads 0 (the kernel leaves whatever its ring buffer held), a
//     string reads as "(fault)" (data_loc length 0). A failed ST_MEM or
//     ST_UMEM read leaves 0 (bpf_probe_read zeroes its destination), a
//     failed string read has length 0, i.e. "(fault)", as in the kernel.
//   - $stackN outside the stack reads 0, like regs_get_kernel_stack_nth.
//   - On x86_64 a kernel read (DEREF, ST_MEM, ST_STRING) of an address
//     below TASK_SIZE reads user memory, as the kernel's probe_mem_read and
//     fetch_store_string do on architectures with separate address spaces.
//   - common_flags carries TRACE_FLAG_IRQS_OFF (0x01) when the probed
//     context ran with interrupts disabled (EFLAGS.IF clear in pt_regs);
//     the other flag bits and common_preempt_count are 0: eBPF cannot see
//     the kernel's preempt count.
//   - A ring buffer that is full counts a miss for the probe; every run
//     counts a hit.

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
	Args   []*Arg
	Layout *Layout
	// EntryDataSize is the value size of Maps.EntryData (8 per slot of the
	// probe that saves the most).
	EntryDataSize int
	// WakeupBytes batches reader wake-ups: a record wakes the reader only
	// when the ring buffer holds at least this many bytes (the reader also
	// polls on its own). 0 wakes it for every record.
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
	// IgnoreTgid, when not 0, is a process whose hits the program counts
	// but does not record: the tracer's own process, whose reading of the
	// ring buffer would otherwise feed probes on the functions it calls
	// (kfree, vfs_read, ...) and fill the ring with its own hits.
	IgnoreTgid uint32
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
	taskSize   = 0x00007ffffffff000
)

// ErrUnsupported is wrapped by compile errors for fetch programs ktrace
// cannot express in eBPF (uprobe file offsets, eprobe fields).
var ErrUnsupported = errors.New("fetch operation not supported by the eBPF backend")

type emitter struct {
	// reserve: the record is built in place in the ring buffer
	// (bpf_ringbuf_reserve/submit), not in the scratch value and copied.
	reserve bool
	p       *ProbeProgram
	maps    *Maps
	ins     asm.Instructions
	label   string
	nlabels int
}

func (e *emitter) emit(in ...asm.Instruction) {
	for _, i := range in {
		if e.label != "" {
			i = i.WithSymbol(e.label)
			e.label = ""
		}
		e.ins = append(e.ins, i)
	}
}

// newLabel returns a fresh jump target name.
func (e *emitter) newLabel() string {
	e.nlabels++
	return fmt.Sprintf("L%d", e.nlabels)
}

// mark attaches l to the next emitted instruction.
func (e *emitter) mark(l string) {
	if e.label != "" {
		// Two targets at one place: a no-op jump carries the first.
		e.emit(asm.Instruction{OpCode: asm.Ja.Op(asm.ImmSource)})
	}
	e.label = l
}

// lookup emits bpf_map_lookup_elem(m, key) with the key at R10+key: R0
// is then the value's address, or NULL.
func (e *emitter) lookup(m asm.FDer, key int32) error {
	if err := e.mapPtr(asm.R1, m); err != nil {
		return err
	}
	e.emit(
		asm.Mov.Reg(asm.R2, asm.R10),
		asm.Add.Imm(asm.R2, key),
		asm.FnMapLookupElem.Call(),
	)
	return nil
}

func (e *emitter) mapPtr(r asm.Register, m asm.FDer) error {
	if m == nil {
		return fmt.Errorf("fetchargs: compile: missing map")
	}
	in := asm.LoadMapPtr(r, 0)
	if err := in.AssociateMap(m); err != nil {
		return fmt.Errorf("fetchargs: compile: %w", err)
	}
	e.emit(in)
	return nil
}

// addImm64 adds a 64-bit constant to r.
func (e *emitter) addImm64(r asm.Register, v int64) {
	switch {
	case v == 0:
	case v >= -1<<31 && v < 1<<31:
		e.emit(asm.Add.Imm(r, int32(v)))
	default:
		e.emit(asm.LoadImm(asm.R0, v, asm.DWord), asm.Add.Reg(r, asm.R0))
	}
}

// readCall emits a bpf_probe_read_{kernel,user}[_str] call with R1 (dst),
// R2 (size) and R3 (src) already set. A kernel read of a user address
// reads user memory on x86_64 (probe_mem_read's TASK_SIZE fallback).
func (e *emitter) readCall(user, str bool) {
	kfn, ufn := asm.FnProbeReadKernel, asm.FnProbeReadUser
	if str {
		kfn, ufn = asm.FnProbeReadKernelStr, asm.FnProbeReadUserStr
	}
	if user {
		e.emit(ufn.Call())
		return
	}
	if e.p.Arch == nil || e.p.Arch.Name != "x86_64" {
		e.emit(kfn.Call())
		return
	}
	kern, done := e.newLabel(), e.newLabel()
	e.emit(
		asm.LoadImm(asm.R4, taskSize, asm.DWord),
		asm.JGE.Reg(asm.R3, asm.R4, kern),
		ufn.Call(),
		asm.Ja.Label(done),
	)
	e.mark(kern)
	e.emit(kfn.Call())
	e.mark(done)
}

// readWord loads the unsigned long at rVal+off into rVal; on failure it
// jumps to fault (or leaves 0 when fault is "").
func (e *emitter) readWord(off int64, user bool, fault string) {
	e.emit(
		asm.Mov.Reg(asm.R1, asm.R10),
		asm.Add.Imm(asm.R1, stkTmp),
		asm.Mov.Imm(asm.R2, 8),
		asm.Mov.Reg(asm.R3, rVal),
	)
	e.addImm64(asm.R3, off)
	e.readCall(user, false)
	if fault != "" {
		e.emit(asm.JNE.Imm(asm.R0, 0, fault))
	}
	e.emit(asm.LoadMem(rVal, asm.R10, stkTmp, asm.DWord))
}

func sizeOf(n int) (asm.Size, error) {
	switch n {
	case 1:
		return asm.Byte, nil
	case 2:
		return asm.Half, nil
	case 4:
		return asm.Word, nil
	case 8:
		return asm.DWord, nil
	}
	return 0, fmt.Errorf("fetchargs: compile: store size %d: %w", n, ErrUnsupported)
}

// recOff is the scratch offset of record offset off.
func recOff(off int) int16 { return int16(HeaderSize + off) }

// Compile returns the eBPF program of one probe. The arguments' @SYM
// references must be resolved (events does it when it arms a probe).
func Compile(p *ProbeProgram, m *Maps) (asm.Instructions, error) {
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
	e := &emitter{p: p, maps: m}
	// A record of fixed size is written where it will be read: reserved
	// in the ring buffer, with no copy. Records with strings send only
	// their used part (a bounded copy from the scratch value), and
	// return probes with entry data keep it in the scratch value.
	e.reserve = p.Layout.Strings == 0 && !(p.Return && len(p.Layout.EntrySlots) > 0)
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
	if p.Return && len(p.Layout.EntrySlots) > 0 {
		if err := e.loadEntryData(); err != nil {
			return nil, err
		}
	}
	if e.reserve {
		e.zeroArgs()
	}
	for i, a := range p.Args {
		if err := e.arg(i, a); err != nil {
			return nil, fmt.Errorf("fetchargs: compile %s: %w", a.Text(), err)
		}
	}
	if err := e.output(); err != nil {
		return nil, err
	}
	return e.ins, nil
}

// counter adds 1 to the probe's hits (field 0) or misses (field 8).
func (e *emitter) counter(field int16) error {
	e.indexKey()
	if err := e.lookup(e.maps.Counters, stkKey); err != nil {
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
	if e.p.IgnoreTgid != 0 {
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
	if e.reserve {
		if err := e.mapPtr(asm.R1, e.maps.Ring); err != nil {
			return err
		}
		ok := e.newLabel()
		e.emit(
			asm.Mov.Imm(asm.R2, int32(HeaderSize+e.p.Layout.RecordSize())),
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
	e.emit(
		asm.LoadMem(asm.R1, asm.R10, stkCPU, asm.Word),
		asm.StoreMem(asm.R10, stkKey, asm.R1, asm.Word),
	)
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
	if ok && e.p.Arch.Name == "x86_64" && !e.p.RawTracepoint {
		// TRACE_FLAG_IRQS_OFF when EFLAGS.IF (bit 9) is clear.
		e.emit(
			asm.LoadMem(asm.R1, rCtx, int16(flagsOff), asm.DWord),
			asm.RSh.Imm(asm.R1, 9),
			asm.And.Imm(asm.R1, 1),
			asm.Xor.Imm(asm.R1, 1),
			asm.StoreMem(rBuf, recOff(2), asm.R1, asm.Byte),
		)
	}
	e.emit(
		asm.LoadMem(asm.R0, asm.R10, stkPidTgid, asm.DWord),
		asm.StoreMem(rBuf, recOff(4), asm.R0, asm.Word),
		asm.RSh.Imm(asm.R0, 32),
		asm.StoreMem(rBuf, 32, asm.R0, asm.DWord),
	)
	if e.p.Cookie {
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
		ipOff, ok := e.p.Arch.Regs[ipReg(e.p.Arch)]
		if !ok {
			return fmt.Errorf("fetchargs: compile: %s has no instruction pointer register", e.p.Arch.Name)
		}
		// The return handler sees the real return address in regs->ip.
		e.emit(
			asm.LoadMem(asm.R1, rCtx, int16(ipOff), asm.DWord),
			asm.StoreMem(rBuf, recOff(16), asm.R1, asm.DWord),
		)
	}
	return nil
}

func ipReg(a *kernel.Arch) string {
	if a.Name == "arm64" {
		return "pc"
	}
	return "ip"
}

// entryDataOff is the scratch offset of the entry-data copy.
func (e *emitter) entryDataOff() int { return HeaderSize + e.p.Layout.RecordSize() }

// depthKey stores {pid_tgid, probe index} at stkKeyA and leaves pid_tgid
// in R9.
func (e *emitter) depthKey() {
	e.emit(
		asm.FnGetCurrentPidTgid.Call(),
		asm.Mov.Reg(rTmp9, asm.R0),
		asm.StoreMem(asm.R10, stkKeyA, asm.R0, asm.DWord),
		asm.Mov.Imm(asm.R1, int32(e.p.Index)),
		asm.StoreMem(asm.R10, stkKeyA+8, asm.R1, asm.DWord),
	)
}

// loadEntryData copies the slots the matching entry program saved into the
// scratch value (zero when there are none) and pops the entry.
func (e *emitter) loadEntryData() error {
	base := e.entryDataOff()
	n := len(e.p.Layout.EntrySlots)
	for i := 0; i < n; i++ {
		e.emit(zeroDWord(rBuf, int16(base+8*i)))
	}
	done := e.newLabel()
	e.depthKey()
	if err := e.lookup(e.maps.EntryDepth, stkKeyA); err != nil {
		return err
	}
	e.emit(
		asm.JEq.Imm(asm.R0, 0, done),
		asm.LoadMem(asm.R1, asm.R0, 0, asm.DWord),
		asm.JEq.Imm(asm.R1, 0, done),
		// Pop this depth.
		asm.Mov.Imm(asm.R2, -1),
		asm.StoreXAdd(asm.R0, asm.R2, asm.DWord),
		asm.StoreMem(asm.R10, stkKeyB, rTmp9, asm.DWord),
		asm.LoadImm(asm.R2, int64(e.p.Index)<<32, asm.DWord),
		asm.Or.Reg(asm.R1, asm.R2),
		asm.StoreMem(asm.R10, stkKeyB+8, asm.R1, asm.DWord),
	)
	if err := e.lookup(e.maps.EntryData, stkKeyB); err != nil {
		return err
	}
	e.emit(
		asm.JEq.Imm(asm.R0, 0, done),
	)
	for i := 0; i < n; i++ {
		e.emit(
			asm.LoadMem(asm.R1, asm.R0, int16(8*i), asm.DWord),
			asm.StoreMem(rBuf, int16(base+8*i), asm.R1, asm.DWord),
		)
	}
	if err := e.mapPtr(asm.R1, e.maps.EntryData); err != nil {
		return err
	}
	e.emit(
		asm.Mov.Reg(asm.R2, asm.R10),
		asm.Add.Imm(asm.R2, stkKeyB),
		asm.FnMapDeleteElem.Call(),
	)
	e.mark(done)
	return nil
}

// output sends the record and counts a miss when the ring buffer is full.
func (e *emitter) output() error {
	if err := e.mapPtr(asm.R1, e.maps.Ring); err != nil {
		return err
	}
	if e.reserve {
		// Submit the record built in place.
		e.emit(asm.Mov.Imm(asm.R2, 0))
		if e.p.WakeupBytes > 0 {
			flags := e.newLabel()
			e.emit(
				asm.Mov.Imm(asm.R2, 0), // BPF_RB_AVAIL_DATA
				asm.FnRingbufQuery.Call(),
				asm.Mov.Imm(asm.R2, 1),
				asm.JLT.Imm(asm.R0, int32(e.p.WakeupBytes), flags),
				asm.Mov.Imm(asm.R2, 2),
			)
			e.mark(flags)
		}
		e.emit(
			asm.Mov.Reg(asm.R1, rBuf),
			asm.FnRingbufSubmit.Call(),
			asm.Mov.Imm(asm.R0, 0),
			asm.Return(),
		)
		return nil
	}
	done := e.newLabel()
	if e.p.WakeupBytes > 0 {
		// BPF_RB_NO_WAKEUP below the threshold, BPF_RB_FORCE_WAKEUP above.
		flags := e.newLabel()
		e.emit(
			asm.Mov.Imm(asm.R2, 0), // BPF_RB_AVAIL_DATA
			asm.FnRingbufQuery.Call(),
			asm.Mov.Imm(rVal, 1),
			asm.JLT.Imm(asm.R0, int32(e.p.WakeupBytes), flags),
			asm.Mov.Imm(rVal, 2),
		)
		e.mark(flags)
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
		asm.Add.Imm(asm.R3, HeaderSize),
		asm.FnRingbufOutput.Call(),
		asm.JEq.Imm(asm.R0, 0, done),
	)
	if err := e.counter(8); err != nil {
		return err
	}
	e.mark(done)
	e.emit(asm.Mov.Imm(asm.R0, 0), asm.Return())
	return nil
}

// loadArg loads function argument n (0-based) by the arch's calling
// convention into rVal.
func (e *emitter) loadArg(n int) error {
	a := e.p.Arch
	if e.p.RawTracepoint {
		if n == 0 {
			// The stub's hidden first parameter: the tracepoint's
			// registration data, NULL for t events.
			e.emit(asm.Mov.Imm(rVal, 0))
			return nil
		}
		e.emit(asm.LoadMem(rVal, rCtx, int16(8*(n-1)), asm.DWord))
		return nil
	}
	if n < len(a.ArgRegs) {
		off, ok := a.Regs[a.ArgRegs[n]]
		if !ok {
			return fmt.Errorf("argument register %s unknown", a.ArgRegs[n])
		}
		e.emit(asm.LoadMem(rVal, rCtx, int16(off), asm.DWord))
		return nil
	}
	if a.Name != "x86_64" {
		e.emit(asm.Mov.Imm(rVal, 0))
		return nil
	}
	// regs_get_kernel_argument: the stack word n-5 above the stack pointer.
	return e.loadStack(n - len(a.ArgRegs) + 1)
}

// loadStack loads the n-th word above the stack pointer (0 when unreadable).
func (e *emitter) loadStack(n int) error {
	spOff, ok := e.p.Arch.Regs[e.p.Arch.SPReg]
	if !ok {
		return fmt.Errorf("no stack pointer register")
	}
	e.emit(asm.LoadMem(rVal, rCtx, int16(spOff), asm.DWord))
	e.readWord(int64(n)*8, false, "")
	return nil
}

// load emits stage 1 of a fetch program into rVal.
func (e *emitter) load(op Op) error {
	a := e.p.Arch
	if e.p.RawTracepoint {
		switch op.Code {
		case OpReg, OpStack, OpStackP, OpRetval, OpEData:
			return fmt.Errorf("%s on a tracepoint: %w", op.Code, ErrUnsupported)
		}
	}
	switch op.Code {
	case OpReg:
		if op.Param%8 != 0 || op.Param > 1<<12 {
			return fmt.Errorf("register offset %d", op.Param)
		}
		e.emit(asm.LoadMem(rVal, rCtx, int16(op.Param), asm.DWord))
	case OpStack:
		return e.loadStack(int(op.Param))
	case OpStackP:
		off, ok := a.Regs[a.SPReg]
		if !ok {
			return fmt.Errorf("no stack pointer register")
		}
		e.emit(asm.LoadMem(rVal, rCtx, int16(off), asm.DWord))
	case OpRetval:
		off, ok := a.Regs[a.RetReg]
		if !ok {
			return fmt.Errorf("no return register")
		}
		e.emit(asm.LoadMem(rVal, rCtx, int16(off), asm.DWord))
	case OpImm:
		e.emit(asm.LoadImm(rVal, int64(op.Imm), asm.DWord))
	case OpArg:
		return e.loadArg(int(op.Param))
	case OpEData:
		slot := -1
		for i, n := range e.p.Layout.EntrySlots {
			if n == int(op.Param) {
				slot = i
			}
		}
		if !e.p.Return || slot < 0 || op.Offset != int64(8*slot) {
			return fmt.Errorf("entry data %s without a matching entry slot", op)
		}
		e.emit(asm.LoadMem(rVal, rBuf, int16(e.entryDataOff()+8*slot), asm.DWord))
	default:
		return fmt.Errorf("%s: %w", op, ErrUnsupported)
	}
	return nil
}

// arg compiles argument i.
func (e *emitter) arg(i int, a *Arg) error {
	ops := a.Ops
	for len(ops) > 0 && ops[0].Code == OpNopSymbol {
		if len(ops) < 2 || ops[1].Code != OpImm || ops[1].Imm == 0 {
			return fmt.Errorf("unresolved symbol %q", ops[0].Data)
		}
		ops = ops[1:]
	}
	if len(ops) < 3 || ops[len(ops)-1].Code != OpEnd {
		return fmt.Errorf("malformed fetch program %s", ProgramString(a.Ops))
	}
	first := ops[0]
	// Stage 2: dereferences.
	j := 1
	for j < len(ops) && (ops[j].Code == OpDeref || ops[j].Code == OpUDeref) {
		j++
	}
	derefs := ops[1:j]
	if j >= len(ops) {
		return fmt.Errorf("fetch program without a store")
	}
	st := ops[j]
	j++
	var bf *Op
	if ops[j].Code == OpModBF {
		bf = &ops[j]
		j++
	}
	count := 0
	if ops[j].Code == OpLpArray {
		count = int(ops[j].Param)
		j++
	}
	if ops[j].Code != OpEnd {
		return fmt.Errorf("unexpected %s in %s", ops[j], ProgramString(a.Ops))
	}
	if count != a.Count {
		return fmt.Errorf("array count %d, type says %d", count, a.Count)
	}
	fieldOff := e.p.Layout.Offsets[i]
	fault := e.newLabel()
	done := e.newLabel()

	switch st.Code {
	case OpStString, OpStUString, OpStSymstr:
		return e.stringArg(i, a, first, derefs, st, count)
	}

	// Numbers: load, dereference, store.
	if err := e.load(first); err != nil {
		return err
	}
	for _, d := range derefs {
		e.readWord(d.Offset, d.Code == OpUDeref, fault)
	}
	sz, err := sizeOf(st.Size)
	if err != nil {
		return err
	}
	n := count
	if n == 0 {
		n = 1
	}
	for k := 0; k < n; k++ {
		dst := fieldOff + k*st.Size
		switch st.Code {
		case OpStRaw:
			e.emit(asm.StoreMem(rBuf, recOff(dst), rVal, sz))
		case OpStMem, OpStUMem:
			e.emit(
				asm.Mov.Reg(asm.R1, rBuf),
				asm.Add.Imm(asm.R1, int32(recOff(dst))),
				asm.Mov.Imm(asm.R2, int32(st.Size)),
				asm.Mov.Reg(asm.R3, rVal),
			)
			e.addImm64(asm.R3, st.Offset+int64(k*st.Size))
			e.readCall(st.Code == OpStUMem, false)
		default:
			return fmt.Errorf("%s: %w", st, ErrUnsupported)
		}
		if bf != nil {
			e.bitfield(dst, st.Size, *bf)
		}
	}
	if len(derefs) == 0 {
		return nil
	}
	e.emit(asm.Ja.Label(done))
	e.mark(fault)
	// A failed dereference: the field reads 0.
	for k := 0; k < a.Size; {
		w := 8
		for w > a.Size-k {
			w /= 2
		}
		s, _ := sizeOf(w)
		if s == asm.DWord {
			e.emit(zeroDWord(rBuf, recOff(fieldOff+k)))
		} else {
			e.emit(asm.StoreImm(rBuf, recOff(fieldOff+k), 0, s))
		}
		k += w
	}
	e.mark(done)
	return nil
}

// bitfield applies MOD_BF to the stored field at dst: the value,
// zero-extended to 64 bits, is shifted left then logically right by the
// container-relative amounts.
func (e *emitter) bitfield(dst, size int, bf Op) {
	sz, _ := sizeOf(size)
	extra := 64 - 8*int(bf.BaseSize)
	e.emit(asm.LoadMem(asm.R1, rBuf, recOff(dst), sz))
	if l := int32(bf.LShift) + int32(extra); l > 0 && l < 64 {
		e.emit(asm.LSh.Imm(asm.R1, l))
	}
	if r := int32(bf.RShift) + int32(extra); r > 0 && r < 64 {
		e.emit(asm.RSh.Imm(asm.R1, r))
	} else if r >= 64 {
		e.emit(asm.Mov.Imm(asm.R1, 0))
	}
	e.emit(asm.StoreMem(rBuf, recOff(dst), asm.R1, sz))
}

// stringArg compiles a string, ustring or symstr argument (or an array of
// strings): each string goes to its own slot of the dynamic area and the
// field gets its __data_loc word.
func (e *emitter) stringArg(i int, a *Arg, first Op, derefs []Op, st Op, count int) error {
	l := e.p.Layout
	fieldOff := l.Offsets[i]
	slot0 := l.SlotOf[i]
	n := count
	if n == 0 {
		n = 1
	}
	fault := e.newLabel()
	// Every element starts as a fault (length 0); stores overwrite it.
	for k := 0; k < n; k++ {
		e.emit(asm.StoreImm(rBuf, recOff(fieldOff+4*k), int64(l.SlotOffset(slot0+k)), asm.Word))
	}

	switch first.Code {
	case OpComm:
		if len(derefs) > 0 || count > 0 {
			return fmt.Errorf("$comm cannot be dereferenced")
		}
		so := recOff(l.SlotOffset(slot0))
		e.emit(
			asm.Mov.Reg(asm.R1, rBuf),
			asm.Add.Imm(asm.R1, int32(so)),
			asm.Mov.Imm(asm.R2, 16),
			asm.FnGetCurrentComm.Call(),
			asm.Mov.Reg(asm.R1, rBuf),
			asm.Add.Imm(asm.R1, int32(so)),
			asm.Mov.Imm(asm.R2, 16),
			asm.Mov.Reg(asm.R3, asm.R1),
			asm.FnProbeReadKernelStr.Call(),
		)
		e.dataLoc(fieldOff, l.SlotOffset(slot0))
		return nil
	case OpData:
		s := first.Data
		if len(s) > l.StrSlot-1 {
			s = s[:l.StrSlot-1]
		}
		so := l.SlotOffset(slot0)
		b := append([]byte(s), 0)
		for k, c := range b {
			e.emit(asm.StoreImm(rBuf, recOff(so+k), int64(c), asm.Byte))
		}
		e.emit(
			asm.StoreImm(rBuf, recOff(fieldOff), int64(len(b))<<16|int64(so), asm.Word),
			asm.Mov.Imm(asm.R1, int32(so+len(b))),
			asm.StoreMem(asm.R10, stkEnd, asm.R1, asm.DWord),
		)
		return nil
	}

	if err := e.load(first); err != nil {
		return err
	}
	// For arrays, the last dereference is redone for each element from
	// lval + 8*k (the kernel's LP_ARRAY over string pointers).
	last := derefs
	var lastDeref *Op
	if count > 0 && len(derefs) > 0 {
		lastDeref = &derefs[len(derefs)-1]
		last = derefs[:len(derefs)-1]
	}
	for _, d := range last {
		e.readWord(d.Offset, d.Code == OpUDeref, fault)
	}
	if count > 0 {
		e.emit(asm.Mov.Reg(rTmp9, rVal))
	}
	for k := 0; k < n; k++ {
		so := l.SlotOffset(slot0 + k)
		if count > 0 {
			e.emit(asm.Mov.Reg(rVal, rTmp9))
			e.addImm64(rVal, int64(8*k))
			if lastDeref != nil {
				e.readWord(lastDeref.Offset, lastDeref.Code == OpUDeref, fault)
			}
		}
		if st.Code == OpStSymstr {
			// The address itself; the decoder prints it as the kernel's
			// "sym+0xoff/0xsize [mod]".
			e.emit(
				asm.Mov.Reg(asm.R1, rVal),
				asm.StoreMem(rBuf, recOff(so), asm.R1, asm.DWord),
				asm.StoreImm(rBuf, recOff(fieldOff+4*k), 8<<16|int64(so), asm.Word),
				asm.Mov.Imm(asm.R1, int32(so+8)),
				asm.StoreMem(asm.R10, stkEnd, asm.R1, asm.DWord),
			)
			continue
		}
		e.emit(
			asm.Mov.Reg(asm.R1, rBuf),
			asm.Add.Imm(asm.R1, int32(recOff(so))),
			asm.Mov.Imm(asm.R2, int32(l.StrSlot)),
			asm.Mov.Reg(asm.R3, rVal),
		)
		e.addImm64(asm.R3, st.Offset)
		e.readCall(st.Code == OpStUString, true)
		e.dataLoc(fieldOff+4*k, so)
	}
	if len(derefs) > 0 {
		// A failed dereference leaves the "(fault)" words stored above.
		e.mark(fault)
	}
	return nil
}

// dataLoc stores (R0 << 16 | so) at field off, R0 being a string read's
// result: a negative result (fault) stores length 0.
func (e *emitter) dataLoc(off, so int) {
	ok := e.newLabel()
	e.emit(
		asm.JSGT.Imm(asm.R0, 0, ok),
		asm.Mov.Imm(asm.R0, 0),
	)
	e.mark(ok)
	// Slots lie in increasing order and are written in that order, so
	// this string's end is the record's end so far.
	e.emit(
		asm.Mov.Reg(asm.R1, asm.R0),
		asm.Add.Imm(asm.R1, int32(so)),
		asm.StoreMem(asm.R10, stkEnd, asm.R1, asm.DWord),
		asm.LSh.Imm(asm.R0, 16),
		asm.Or.Imm(asm.R0, int32(so)),
		asm.StoreMem(rBuf, recOff(off), asm.R0, asm.Word),
	)
}

// CompileEntry returns the entry program of a return probe that uses
// entry data ($argN or BTF arguments on a kretprobe or fprobe exit): it
// pushes the function's arguments for the return program, keyed by thread
// and call depth. It returns nil when the probe needs none.
func CompileEntry(p *ProbeProgram, m *Maps) (asm.Instructions, error) {
	if p == nil || p.Layout == nil || m == nil || p.Arch == nil {
		return nil, fmt.Errorf("fetchargs: compile entry: incomplete probe")
	}
	slots := p.Layout.EntrySlots
	if !p.Return || len(slots) == 0 {
		return nil, nil
	}
	if 8*len(slots) > p.EntryDataSize {
		return nil, fmt.Errorf("fetchargs: compile entry: %d slots exceed entry data of %d bytes", len(slots), p.EntryDataSize)
	}
	if p.Cookie {
		return nil, fmt.Errorf("fetchargs: compile entry: a shared program cannot save entry data")
	}
	e := &emitter{p: p, maps: m}
	e.emit(asm.Mov.Reg(rCtx, asm.R1))
	e.emit(
		asm.FnGetSmpProcessorId.Call(),
		asm.StoreMem(asm.R10, stkKey, asm.R0, asm.Word),
	)
	if err := e.lookup(m.Scratch, stkKey); err != nil {
		return nil, err
	}
	ok, out := e.newLabel(), e.newLabel()
	e.emit(
		asm.JNE.Imm(asm.R0, 0, ok),
		asm.Mov.Imm(asm.R0, 0),
		asm.Return(),
	)
	e.mark(ok)
	e.emit(asm.Mov.Reg(rBuf, asm.R0))
	// The slots, built at the start of the scratch value.
	for i := 0; i*8 < p.EntryDataSize; i++ {
		if i < len(slots) {
			if err := e.loadArg(slots[i]); err != nil {
				return nil, err
			}
			e.emit(asm.StoreMem(rBuf, int16(8*i), rVal, asm.DWord))
		} else {
			e.emit(zeroDWord(rBuf, int16(8*i)))
		}
	}
	// depth := ++EntryDepth[{pid_tgid, index}]
	e.depthKey()
	have := e.newLabel()
	if err := e.lookup(m.EntryDepth, stkKeyA); err != nil {
		return nil, err
	}
	e.emit(
		asm.JNE.Imm(asm.R0, 0, have),
		zeroDWord(asm.R10, stkTmp),
	)
	if err := e.mapPtr(asm.R1, m.EntryDepth); err != nil {
		return nil, err
	}
	e.emit(
		asm.Mov.Reg(asm.R2, asm.R10),
		asm.Add.Imm(asm.R2, stkKeyA),
		asm.Mov.Reg(asm.R3, asm.R10),
		asm.Add.Imm(asm.R3, stkTmp),
		asm.Mov.Imm(asm.R4, 0),
		asm.FnMapUpdateElem.Call(),
	)
	if err := e.lookup(m.EntryDepth, stkKeyA); err != nil {
		return nil, err
	}
	e.emit(
		asm.JEq.Imm(asm.R0, 0, out),
	)
	e.mark(have)
	e.emit(
		asm.Mov.Imm(asm.R1, 1),
		asm.StoreXAdd(asm.R0, asm.R1, asm.DWord),
		asm.LoadMem(asm.R1, asm.R0, 0, asm.DWord),
		asm.StoreMem(asm.R10, stkKeyB, rTmp9, asm.DWord),
		asm.LoadImm(asm.R2, int64(p.Index)<<32, asm.DWord),
		asm.Or.Reg(asm.R1, asm.R2),
		asm.StoreMem(asm.R10, stkKeyB+8, asm.R1, asm.DWord),
	)
	if err := e.mapPtr(asm.R1, m.EntryData); err != nil {
		return nil, err
	}
	e.emit(
		asm.Mov.Reg(asm.R2, asm.R10),
		asm.Add.Imm(asm.R2, stkKeyB),
		asm.Mov.Reg(asm.R3, rBuf),
		asm.Mov.Imm(asm.R4, 0),
		asm.FnMapUpdateElem.Call(),
	)
	e.mark(out)
	e.emit(asm.Mov.Imm(asm.R0, 0), asm.Return())
	return e.ins, nil
}

// zeroDWord stores a 64-bit zero (BPF_ST|BPF_DW, which asm.StoreImm does
// not build).
func zeroDWord(dst asm.Register, off int16) asm.Instruction {
	return asm.Instruction{OpCode: asm.StoreImmOp(asm.DWord), Dst: dst, Offset: off}
}
