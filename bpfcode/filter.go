package bpfcode

import (
	"errors"
	"fmt"

	"github.com/cilium/ebpf/asm"

	"github.com/ktrace-dev/ktrace/fetchargs"
	"github.com/ktrace-dev/ktrace/filter"
)

// The filter stage: an event filter (filter.Filter) compiled to run on the
// record once it is built, before it is sent. A hit the filter rejects
// ends the program: it is counted, but takes no ring-buffer space and
// never reaches user space. The predicates run in the kernel's branch
// program order, each leaving 0 or 1 in R0.

// FilterScratch is the scratch value a filter on a record of size bytes
// (a probe's own, or an event probe's attached one) needs: the record, then room for comparisons that read past a string's
// start (a pattern's length, or the whole record for an infix search) and
// for pointer strings, which are copied there (up to the kernel's 1024
// bytes).
func FilterScratch(size int) int {
	return fetchargs.HeaderSize + 2*size + pcharMax + 2*filter.MaxStringLen + 8
}

// pcharMax is how much of a pointer string the filter reads, as the
// kernel's USTRING_BUF_SIZE.
const pcharMax = 1024

// Registers of the filter stage (the argument stage is done with them).
const (
	rStr = asm.R8 // start of the string being compared
	rLen = asm.R9 // its length argument (the kernel's len)
)

// filterStage emits the filter's program. Its results: fall through when
// the record passes, end the program when it does not.
// The filter reads a record of size bytes at rBuf + HeaderSize, and the
// comm at rBuf + 16.
func (e *emitter) filterStage(f *filter.Filter, size int) error {
	return e.filterStageTo(f, size, "")
}

// filterStageTo is filterStage jumping to fail, when not "", where the
// record does not pass (a hist trigger's filter skips that histogram).
func (e *emitter) filterStageTo(f *filter.Filter, size int, fail string) error {
	preds := f.Preds()
	n := len(preds)
	if need := FilterScratch(size); e.p.ScratchSize < need {
		return fmt.Errorf("fetchargs: compile: filter needs a scratch value of %d bytes, have %d", need, e.p.ScratchSize)
	}
	e.filterRec = size
	labels := make([]string, n+2)
	for i := range labels {
		labels[i] = e.newLabel()
	}
	for i, p := range preds {
		e.mark(labels[i])
		if err := e.pred(p); err != nil {
			return fmt.Errorf("filter %q: %w", p.Text, err)
		}
		when, next := f.Branch(i)
		w := int32(0)
		if when {
			w = 1
		}
		e.emit(asm.JEq.Imm(asm.R0, w, labels[next]))
	}
	pass := e.newLabel()
	e.mark(labels[n])
	e.emit(asm.Ja.Label(pass))
	e.mark(labels[n+1])
	if fail != "" {
		e.emit(asm.Ja.Label(fail))
	} else {
		e.emit(asm.Mov.Imm(asm.R0, 0), asm.Return())
	}
	e.mark(pass)
	return nil
}

// result sets R0 to 1 when cond jumps, else 0: emit the conditional
// jump to the returned label after calling it.
func (e *emitter) boolResult(jump func(yes string)) {
	yes, done := e.newLabel(), e.newLabel()
	jump(yes)
	e.emit(asm.Mov.Imm(asm.R0, 0), asm.Ja.Label(done))
	e.mark(yes)
	e.emit(asm.Mov.Imm(asm.R0, 1))
	e.mark(done)
}

// loadField loads a numeric field into R1, zero-extended.
func (e *emitter) loadField(fl *filter.Field) error {
	sz, err := sizeOf(fl.Size)
	if err != nil {
		return err
	}
	e.emit(asm.LoadMem(asm.R1, rBuf, recOff(e.fieldPos(fl.Offset)), sz))
	return nil
}

// signExtend sign-extends the low size bytes of r.
func (e *emitter) signExtend(r asm.Register, size int) {
	if size < 8 {
		sh := int32(64 - 8*size)
		e.emit(asm.LSh.Imm(r, sh), asm.ArSh.Imm(r, sh))
	}
}

func truncVal(v uint64, size int) uint64 {
	if size >= 8 {
		return v
	}
	return v & (1<<(8*uint(size)) - 1)
}

// pred computes one predicate into R0.
func (e *emitter) pred(p *filter.Pred) error {
	fl := p.Field
	switch p.Kind {
	case filter.KindNop:
		e.emit(asm.Mov.Imm(asm.R0, 0))
	case filter.KindEq:
		if err := e.loadField(fl); err != nil {
			return err
		}
		e.emit(asm.LoadImm(asm.R2, int64(truncVal(p.Val, fl.Size)), asm.DWord))
		jmp := asm.JEq
		if p.Not {
			jmp = asm.JNE
		}
		e.boolResult(func(yes string) { e.emit(jmp.Reg(asm.R1, asm.R2, yes)) })
	case filter.KindCmp:
		if err := e.loadField(fl); err != nil {
			return err
		}
		v := truncVal(p.Val, fl.Size)
		e.emit(asm.LoadImm(asm.R2, int64(v), asm.DWord))
		if p.Op == filter.OpBand {
			e.emit(asm.And.Reg(asm.R1, asm.R2))
			e.boolResult(func(yes string) { e.emit(asm.JNE.Imm(asm.R1, 0, yes)) })
			return nil
		}
		if fl.Signed {
			e.signExtend(asm.R1, fl.Size)
			e.signExtend(asm.R2, fl.Size)
		}
		jmp, err := cmpJump(p.Op, fl.Signed)
		if err != nil {
			return err
		}
		e.boolResult(func(yes string) { e.emit(jmp.Reg(asm.R1, asm.R2, yes)) })
	case filter.KindCPU:
		e.emit(asm.LoadMem(asm.R1, asm.R10, stkCPU, asm.Word))
		e.emit(asm.LoadImm(asm.R2, int64(int32(p.Val)), asm.DWord))
		e.signExtend(asm.R1, 4)
		if p.Op == filter.OpBand {
			e.emit(asm.Mov.Imm(asm.R0, 0))
			return nil
		}
		jmp, err := cmpJump(p.Op, true)
		if err != nil {
			return err
		}
		e.boolResult(func(yes string) { e.emit(jmp.Reg(asm.R1, asm.R2, yes)) })
	case filter.KindCPUCPUMask, filter.KindNumCPUMask:
		if p.Kind == filter.KindCPUCPUMask {
			e.emit(asm.LoadMem(asm.R1, asm.R10, stkCPU, asm.Word))
		} else {
			if err := e.loadField(fl); err != nil {
				return err
			}
			// The kernel takes the field as an unsigned int.
			e.emit(asm.LSh.Imm(asm.R1, 32), asm.RSh.Imm(asm.R1, 32))
		}
		return e.maskTest(p)
	case filter.KindFunction:
		if err := e.loadField(fl); err != nil {
			return err
		}
		out := e.newLabel()
		done := e.newLabel()
		in := int32(1)
		if p.Op == filter.OpNE {
			in = 0
		}
		e.emit(
			asm.LoadImm(asm.R2, int64(p.Val), asm.DWord),
			asm.JLT.Reg(asm.R1, asm.R2, out),
			asm.LoadImm(asm.R2, int64(p.Val2), asm.DWord),
			asm.JGE.Reg(asm.R1, asm.R2, out),
			asm.Mov.Imm(asm.R0, in),
			asm.Ja.Label(done),
		)
		e.mark(out)
		e.emit(asm.Mov.Imm(asm.R0, 1-in))
		e.mark(done)
	case filter.KindComm, filter.KindString, filter.KindStrLoc, filter.KindStrRelLoc, filter.KindPChar, filter.KindPCharUser:
		return e.stringPred(p)
	default:
		return fmt.Errorf("predicate kind %d: %w", p.Kind, ErrUnsupported)
	}
	return nil
}

func cmpJump(op filter.Op, signed bool) (asm.JumpOp, error) {
	switch op {
	case filter.OpEQ:
		return asm.JEq, nil
	case filter.OpNE:
		return asm.JNE, nil
	case filter.OpLT:
		if signed {
			return asm.JSLT, nil
		}
		return asm.JLT, nil
	case filter.OpLE:
		if signed {
			return asm.JSLE, nil
		}
		return asm.JLE, nil
	case filter.OpGT:
		if signed {
			return asm.JSGT, nil
		}
		return asm.JGT, nil
	case filter.OpGE:
		if signed {
			return asm.JSGE, nil
		}
		return asm.JGE, nil
	}
	return 0, fmt.Errorf("operator %v: %w", op, ErrUnsupported)
}

// maskTest compares the CPU number in R1 with a CPUS{} list of several
// CPUs: never equal, "&" tests its bit.
func (e *emitter) maskTest(p *filter.Pred) error {
	switch p.Op {
	case filter.OpEQ:
		e.emit(asm.Mov.Imm(asm.R0, 0))
		return nil
	case filter.OpNE:
		// Only CPUs the kernel has compare; a number field beyond them
		// never matches.
		if p.Kind == filter.KindNumCPUMask {
			e.boolResult(func(yes string) { e.emit(asm.JLT.Imm(asm.R1, int32(len(p.Mask)), yes)) })
			return nil
		}
		e.emit(asm.Mov.Imm(asm.R0, 1))
		return nil
	}
	if len(p.Mask) > 64 {
		return fmt.Errorf("CPUS{} lists beyond 64 CPUs: %w", ErrUnsupported)
	}
	var bits uint64
	for c, on := range p.Mask {
		if on {
			bits |= 1 << uint(c)
		}
	}
	no := e.newLabel()
	done := e.newLabel()
	e.emit(
		asm.JGE.Imm(asm.R1, int32(len(p.Mask)), no),
		asm.LoadImm(asm.R0, int64(bits), asm.DWord),
		asm.RSh.Reg(asm.R0, asm.R1),
		asm.And.Imm(asm.R0, 1),
		asm.Ja.Label(done),
	)
	e.mark(no)
	e.emit(asm.Mov.Imm(asm.R0, 0))
	e.mark(done)
	return nil
}

// ErrFilterUnsupported is wrapped by CheckFilter's errors: a filter the
// eBPF stage cannot run.
var ErrFilterUnsupported = errors.New("not supported by the eBPF filter stage")

// CheckFilter reports whether the filter stage can run f, before any
// program is built. Not compiled: glob patterns with wildcards inside
// ("a*b", "?", "["), infix patterns ("*x*") on strings of run-time length
// (probe strings, __data_loc and pointer fields; comm and char arrays
// take them), and cpumask fields.
func CheckFilter(f *filter.Filter) error {
	for _, p := range f.Preds() {
		switch {
		case p.Regex != nil && p.Regex.Type == filter.MatchGlob && !fixedString(p):
			if err := checkGlobLoop(globElems(p.Regex.Pattern)); err != nil {
				return fmt.Errorf("%s: %w", p.Text, errors.Join(err, ErrFilterUnsupported))
			}
		case p.Regex != nil && p.Regex.Type == filter.MatchMiddle && !fixedString(p):
			if err := checkGlobLoop(infixElems(p.Regex.Pattern)); err != nil {
				return fmt.Errorf("%s: %w", p.Text, errors.Join(err, ErrFilterUnsupported))
			}
		case p.Regex != nil && p.Regex.Type == filter.MatchGlob:
			n := 16
			if p.Kind == filter.KindString {
				n = p.Field.Size
			}
			if err := checkGlob(p.Regex.Pattern, n); err != nil {
				return fmt.Errorf("%s: %w", p.Text, errors.Join(err, ErrFilterUnsupported))
			}
		case p.Kind == filter.KindCPUMask || p.Kind == filter.KindCPUMaskCPU:
			return fmt.Errorf("%s: cpumask field: %w", p.Text, ErrFilterUnsupported)
		case len(p.Mask) > 64:
			return fmt.Errorf("%s: CPUS{} beyond 64 CPUs: %w", p.Text, ErrFilterUnsupported)
		}
	}
	return nil
}

// fixedString reports whether a string predicate reads a string of a
// fixed size: the comm, a char array with a size.
func fixedString(p *filter.Pred) bool {
	return p.Kind == filter.KindComm || (p.Kind == filter.KindString && p.Field.Size > 0)
}

// Event probe filters. An event probe's "if" filter reads the attached
// event's record, which a BPF tracepoint program sees as its context, with
// one difference: the kernel hands the program its pt_regs pointer where
// the record's common fields are. The program rebuilds those it can.

// maxSourceSize bounds the copy of an attached record: the kernel's
// per-CPU buffer for a tracepoint's BPF record (PERF_MAX_TRACE_SIZE).
const maxSourceSize = 8192

// SourceSize is how much of an attached record with fields an event
// probe's filter copies: its fixed part, and when it has __data_loc or
// __rel_loc strings, room for their data (up to the kernel's
// MAX_FILTER_STR_VAL-bounded comparisons, a page's worth of strings).
func SourceSize(fields []fetchargs.EventField) int {
	size, dynamic := 8, false
	for _, f := range fields {
		size = max(size, f.Offset+f.Size)
		switch filter.ClassOf(f.Type, false) {
		case filter.DynString, filter.RelDynString:
			dynamic = true
		}
	}
	if dynamic {
		size += 4096
	}
	return min(size, maxSourceSize)
}

// CheckSourceFilter is CheckFilter for an event probe's "if" filter on a
// dynamic event's record: the common fields the BPF program cannot know
// there (the interrupt flags and the preemption count the kernel stores
// with each record) are refused too. A tracepoint's record has them
// (ProbeProgram.SourceFlags): CheckFilter suffices.
func CheckSourceFilter(f *filter.Filter) error {
	if err := CheckFilter(f); err != nil {
		return err
	}
	for _, p := range f.Preds() {
		if p.Field == nil {
			continue
		}
		switch p.Field.Name {
		case "common_flags", "common_preempt_count":
			return fmt.Errorf("%s: field %s of the attached record: %w", p.Text, p.Field.Name, ErrFilterUnsupported)
		}
	}
	return nil
}

// sourceFilter emits an event probe's "if" filter: the attached record is
// copied into this CPU's scratch value (rBuf), its common fields and the
// header's comm are filled in, and the filter stage ends the program when
// the record does not pass.
func (e *emitter) sourceFilter() error {
	if e.p.Source != nil {
		// The source record is in the scratch value sourceRecord
		// found, at rBuf.
		return e.sourceCommon()
	}
	if err := e.cpuScratch(); err != nil {
		return err
	}
	copied := e.newLabel()
	e.emit(
		asm.Mov.Reg(asm.R1, rBuf),
		asm.Add.Imm(asm.R1, fetchargs.HeaderSize),
		asm.Mov.Imm(asm.R2, int32(e.p.SourceSize)),
		asm.Mov.Reg(asm.R3, rCtx),
		asm.FnProbeReadKernel.Call(),
		asm.JEq.Imm(asm.R0, 0, copied),
		asm.Mov.Imm(asm.R0, 0),
		asm.Return(),
	)
	e.mark(copied)
	return e.sourceCommon()
}

// recordCommon writes a tracepoint record's common fields, which the perf
// path overwrote, into the copy at rBuf (common_type typ, common_pid the
// current thread, flags and preempt count 0) and the header's comm.
func (e *emitter) recordCommon(typ uint16, flags, preempt uint8) {
	e.emit(
		asm.StoreImm(rBuf, recOff(0), int64(typ), asm.Half),
		asm.StoreImm(rBuf, recOff(2), int64(flags)|int64(preempt)<<8, asm.Half),
		asm.LoadMem(asm.R0, asm.R10, stkPidTgid, asm.DWord),
		asm.StoreMem(rBuf, recOff(4), asm.R0, asm.Word),
		asm.Mov.Reg(asm.R1, rBuf),
		asm.Add.Imm(asm.R1, 16),
		asm.Mov.Imm(asm.R2, 16),
		asm.FnGetCurrentComm.Call(),
	)
}

// sourceCommon fills in the common fields and the header's comm of the
// attached record copy at rBuf and runs the event probe's filter on it.
func (e *emitter) sourceCommon() error {
	e.recordCommon(e.p.SourceType, e.p.SourceFlags, e.p.SourcePreempt)
	size := e.p.SourceSize
	if e.p.Source != nil {
		size = e.p.Source.Layout.RecordSize()
	}
	return e.filterStage(e.p.SourceFilter, size)
}
