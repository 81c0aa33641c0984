package bpfcode

import (
	"errors"
	"fmt"
	"math"

	"github.com/cilium/ebpf/asm"

	"github.com/ktrace-dev/ktrace/fetchargs"
	"github.com/ktrace-dev/ktrace/filter"
)

// The hist stage: hist triggers counted where the event happens. Once the
// record is built (in the scratch value), each of the probe's histograms
// whose own "if" filter passes the record gets its key assembled as the
// kernel's event_hist_trigger assembles it, finds or creates its entry in
// a BPF hash map and adds to the entry's hitcount and sums. This runs
// before the event's filter, as in the kernel, where the event filter
// only decides what reaches the trace.

// Hist is one hist trigger a probe's program updates.
type Hist struct {
	// Map is the histogram: a BPF_MAP_TYPE_HASH of KeySize-byte keys and
	// HistValueSize(len(Vals))-byte values, whose max_entries is the
	// trigger's size (a full table drops new keys, as the kernel's does).
	Map asm.FDer
	// Counts is a BPF_MAP_TYPE_PERCPU_ARRAY of one entry, {hits, drops
	// uint64} (HistCountSize): the hits that found or created an entry,
	// and those whose new key did not fit.
	Counts  asm.FDer
	KeySize int
	Keys    []HistKey
	Vals    []HistVal
	// Filter is the trigger's "if" filter (nil: none).
	Filter *filter.Filter
	// Vars are the variables' expressions, stored in the entry
	// (HistLayout); Refs the variable references expressions read;
	// Actions the onmatch() trace() actions (histvars.go).
	Vars    []*HistExpr
	Refs    []HistRef
	Actions []*HistAction
	// NTrack is the number of values onmax() and onchange() handlers
	// follow; Saves the fields save() keeps, computed from the record.
	NTrack int
	Saves  []*HistExpr
	// Pause, when set, is a BPF_MAP_TYPE_ARRAY of one u32: not 0 while
	// the histogram is paused (pause, or a disable_hist trigger).
	Pause asm.FDer
}

// Layout is the value layout of h's map.
func (h *Hist) Layout() HistLayout {
	l := HistLayout{NVals: len(h.Vals), NVars: len(h.Vars), NTrack: h.NTrack}
	for _, s := range h.Saves {
		l.Saves = append(l.Saves, s.Str != nil)
	}
	for i, v := range h.Vars {
		if v != nil && v.Op == 0 && v.Str != nil {
			if l.StrVars == nil {
				l.StrVars = make([]bool, len(h.Vars))
			}
			l.StrVars[i] = true
		}
		if v != nil && v.Op == 0 && (v.Stack || h.stackRef(v)) {
			if l.StackVars == nil {
				l.StackVars = make([]bool, len(h.Vars))
			}
			l.StackVars[i] = true
		}
	}
	return l
}

// HistKey is one field of a histogram's key.
type HistKey struct {
	// Field is the record field read (nil with CPU).
	Field *filter.Field
	// CPU keys the CPU the hit happened on (common_cpu); Timestamp the
	// hit's time (common_timestamp), in microseconds when Usecs.
	CPU              bool
	Timestamp, Usecs bool
	// Stack keys the task's kernel stack (a stacktrace key): Size bytes
	// of return addresses from bpf_get_task_stack, innermost first, the
	// rest zero. The frames of the program and of the path that ran it
	// are among them; whoever reads the map takes them off.
	Stack bool
	// Offset and Size place the value in the key: Size bytes of the u64
	// value (sign-extended from a signed field). A string field (a
	// char array or a __data_loc string) is copied whole, up to
	// filter.MaxStringLen-1 bytes and a NUL, at Offset.
	Offset, Size int
	// Log2 keys ilog2(roundup_pow_of_two(v)); Log2Wraps makes that 0
	// for v above 2^63 (64 without it), as 6.12's build computes it
	// (grammar.Dialect.Log2Wraps). Bucket, when not 0, keys v rounded
	// down to a multiple of it.
	Log2      bool
	Log2Wraps bool
	Bucket    uint64
	// Expr, when set, is the key's value: an expression of the record's
	// fields and constants (no variable references, which resolve after
	// the key is made), stored as its u64 in Size bytes.
	Expr *HistExpr
}

// HistVal is one summed field of a histogram's entries.
type HistVal struct {
	// Field is the record field summed; nil sums the hit's timestamp
	// (common_timestamp), in microseconds when Usecs, or 1 with Hitcount
	// (a hitcount column such as hitcount.percent).
	Field    *filter.Field
	Usecs    bool
	Hitcount bool
	// Expr, when set, is the value summed (an expression or a variable
	// reference).
	Expr *HistExpr
}

// HistCountSize is the value size of Hist.Counts: {hits, drops} u64s,
// per CPU.
const HistCountSize = 16

// HistScratch is the scratch value a probe whose record has size bytes
// needs for histograms: the filter stage's room, then one key and one
// initial value (HistAreaSize).
func HistScratch(size int) int { return FilterScratch(size) + HistAreaSize }

// HistAreaSize bounds a key (the kernel's HIST_KEY_SIZE_MAX), an initial
// value, the resolved variable references, the temporaries of
// expressions and a synthetic event's parameters (histvars.go).
const HistAreaSize = histParamOff + 8*MaxSynthParams

// ErrHistUnsupported is wrapped for hist triggers the eBPF backend cannot
// count.
var ErrHistUnsupported = errors.New("hist trigger not supported by the eBPF backend")

// CheckHist reports whether the hist stage can count h.
func CheckHist(h *Hist) error {
	if h.Map == nil || h.Counts == nil {
		return fmt.Errorf("histogram without its maps: %w", ErrHistUnsupported)
	}
	if h.KeySize <= 0 || h.KeySize > histKeyMax || h.KeySize%8 != 0 {
		return fmt.Errorf("key of %d bytes: %w", h.KeySize, ErrHistUnsupported)
	}
	if h.Layout().Size() > histValueMax {
		return fmt.Errorf("%d values and %d variables: %w", len(h.Vals), len(h.Vars), ErrHistUnsupported)
	}
	if err := h.checkVars(); err != nil {
		return err
	}
	if h.Filter != nil {
		if err := CheckFilter(h.Filter); err != nil {
			return err
		}
	}
	for _, k := range h.Keys {
		if k.Offset < 0 || k.Offset+k.Size > h.KeySize {
			return fmt.Errorf("key field outside the key: %w", ErrHistUnsupported)
		}
		if k.CPU || k.Timestamp {
			continue
		}
		if k.Expr != nil {
			if k.Expr.hasRef() {
				return fmt.Errorf("a key reading a variable: %w", ErrHistUnsupported)
			}
			if _, err := sizeOf(k.Size); err != nil {
				return fmt.Errorf("expression key stored in %d bytes: %w", k.Size, ErrHistUnsupported)
			}
			continue
		}
		if k.Stack {
			if k.Size <= 0 || k.Size%8 != 0 || k.Offset%8 != 0 {
				return fmt.Errorf("stack key of %d bytes at %d: %w", k.Size, k.Offset, ErrHistUnsupported)
			}
			continue
		}
		if k.Field == nil {
			return fmt.Errorf("key without a field: %w", ErrHistUnsupported)
		}
		switch k.Field.Class {
		case filter.StaticString, filter.DynString, filter.RelDynString:
			continue
		case filter.Numeric, filter.PtrString:
		default:
			return fmt.Errorf("key %s: %w", k.Field.Name, ErrHistUnsupported)
		}
		if _, err := sizeOf(k.Field.Size); err != nil {
			return fmt.Errorf("key %s of %d bytes: %w", k.Field.Name, k.Field.Size, ErrHistUnsupported)
		}
		if _, err := sizeOf(k.Size); err != nil {
			return fmt.Errorf("key %s stored in %d bytes: %w", k.Field.Name, k.Size, ErrHistUnsupported)
		}
	}
	for _, v := range h.Vals {
		if v.Field == nil || v.Expr != nil {
			continue
		}
		if v.Field.Class != filter.Numeric && v.Field.Class != filter.PtrString {
			return fmt.Errorf("value %s: %w", v.Field.Name, ErrHistUnsupported)
		}
		if _, err := sizeOf(v.Field.Size); err != nil {
			return fmt.Errorf("value %s of %d bytes: %w", v.Field.Name, v.Field.Size, ErrHistUnsupported)
		}
	}
	return nil
}

// histStage emits the updates of every histogram of the probe, for the
// record of size bytes at rBuf.
func (e *emitter) histStage(size int) error {
	e.filterRec = size
	area := FilterScratch(size)
	need := area + HistAreaSize
	if e.p.Source != nil {
		// rBuf is past the source record.
		need += e.p.SourceSize
	}
	if e.p.ScratchSize < need || area+HistAreaSize > 1<<15-1 {
		return fmt.Errorf("fetchargs: compile: histograms need a scratch value of %d bytes, have %d", need, e.p.ScratchSize)
	}
	for _, h := range e.p.Hists {
		if err := CheckHist(h); err != nil {
			return err
		}
		if err := e.hist(h, size, area); err != nil {
			return err
		}
	}
	return nil
}

// hist emits one histogram's update. The key is built at rBuf+area, the
// initial value after it.
func (e *emitter) hist(h *Hist, size, area int) error {
	next := e.newLabel()
	if h.Pause != nil {
		on := e.newLabel()
		if err := e.switchValue(h.Pause, on); err != nil {
			return err
		}
		e.emit(asm.JNE.Imm(asm.R1, 0, next))
		e.mark(on)
	}
	if h.Filter != nil {
		if err := e.filterStageTo(h.Filter, size, next); err != nil {
			return err
		}
	}
	key := int16(area)
	val := int16(area + histKeyMax)
	for off := 0; off < h.KeySize; off += 8 {
		e.emit(zeroDWord(rBuf, key+int16(off)))
	}
	for _, k := range h.Keys {
		if err := e.histKey(k, key, area); err != nil {
			return err
		}
	}
	// References to other histograms' variables must all resolve, or
	// the hit is not counted.
	if err := e.resolveRefs(h, area, false, next); err != nil {
		return err
	}
	// Find the entry, or create it with zero sums and variables, and the
	// comm.
	lay := h.Layout()
	found := e.newLabel()
	if err := e.histLookup(h, key); err != nil {
		return err
	}
	e.emit(asm.JNE.Imm(asm.R0, 0, found))
	for off := 0; off < lay.CommOff(); off += 8 {
		e.emit(zeroDWord(rBuf, val+int16(off)))
	}
	e.emit(
		asm.LoadMem(asm.R1, rBuf, 16, asm.DWord), // the comm
		asm.StoreMem(rBuf, val+int16(lay.CommOff()), asm.R1, asm.DWord),
		asm.LoadMem(asm.R1, rBuf, 24, asm.DWord),
		asm.StoreMem(rBuf, val+int16(lay.CommOff())+8, asm.R1, asm.DWord),
	)
	if err := e.mapPtr(asm.R1, h.Map); err != nil {
		return err
	}
	e.emit(
		asm.Mov.Reg(asm.R2, rBuf),
		asm.Add.Imm(asm.R2, int32(key)),
		asm.Mov.Reg(asm.R3, rBuf),
		asm.Add.Imm(asm.R3, int32(val)),
		asm.Mov.Imm(asm.R4, 1), // BPF_NOEXIST: another CPU may have made it
		asm.FnMapUpdateElem.Call(),
	)
	retry := e.newLabel()
	e.emit(
		asm.JEq.Imm(asm.R0, 0, retry),
		asm.JEq.Imm(asm.R0, -17, retry), // EEXIST
	)
	// The table is full: the hit is dropped.
	if err := e.histCount(h, 8); err != nil {
		return err
	}
	e.emit(asm.Ja.Label(next))
	e.mark(retry)
	if err := e.histLookup(h, key); err != nil {
		return err
	}
	e.emit(asm.JEq.Imm(asm.R0, 0, next))
	e.mark(found)
	// R0 is the entry, shared by every CPU: atomic adds, as the kernel's
	// atomic64 sums.
	e.emit(
		asm.Mov.Reg(rVal, asm.R0),
		asm.Mov.Imm(asm.R1, 1),
		asm.AddAtomic.Mem(rVal, asm.R1, asm.DWord, 0),
	)
	for i, v := range h.Vals {
		switch {
		case v.Expr != nil:
			if err := e.histExpr(v.Expr, area, 0); err != nil {
				return err
			}
		case v.Hitcount:
			e.emit(asm.Mov.Imm(asm.R1, 1))
		case v.Field == nil:
			e.emit(asm.LoadMem(asm.R1, rBuf, 0, asm.DWord))
			if v.Usecs {
				// ns2usecs: rounded to the nearest microsecond.
				e.emit(asm.Add.Imm(asm.R1, 500), asm.Div.Imm(asm.R1, 1000))
			}
		default:
			if err := e.loadField(v.Field); err != nil {
				return err
			}
			if v.Field.Signed {
				e.signExtend(asm.R1, v.Field.Size)
			}
		}
		e.emit(asm.AddAtomic.Mem(rVal, asm.R1, asm.DWord, int16(8*(i+1))))
	}
	if err := e.histVars(h, area); err != nil {
		return err
	}
	if err := e.histCount(h, 0); err != nil {
		return err
	}
	if len(h.Actions) > 0 {
		// The histogram's own variables, then the actions.
		if err := e.resolveRefs(h, area, true, next); err != nil {
			return err
		}
		if err := e.histActions(h, area); err != nil {
			return err
		}
	}
	e.mark(next)
	return nil
}

// histLookup emits bpf_map_lookup_elem of the key at rBuf+key in h's map.
func (e *emitter) histLookup(h *Hist, key int16) error {
	if err := e.mapPtr(asm.R1, h.Map); err != nil {
		return err
	}
	e.emit(
		asm.Mov.Reg(asm.R2, rBuf),
		asm.Add.Imm(asm.R2, int32(key)),
		asm.FnMapLookupElem.Call(),
	)
	return nil
}

// histCount adds 1 to h's hits (field 0) or drops (field 8), this CPU's.
func (e *emitter) histCount(h *Hist, field int16) error {
	e.emit(asm.StoreImm(asm.R10, stkKey, 0, asm.Word))
	return e.bump(h.Counts, field)
}

// kernelStack stores the hit's kernel stack at base+off, size bytes,
// leaving the helper's result (bytes stored, or a negative error) in R0:
// bpf_get_stack of the context in a tracepoint program
// (ProbeProgram.TracepointCtx), bpf_get_task_stack of the current task
// elsewhere. Both zero what they do not fill.
func (e *emitter) kernelStack(base asm.Register, off, size int32) {
	if !e.p.TracepointCtx {
		e.emit(
			asm.FnGetCurrentTaskBtf.Call(),
			asm.Mov.Reg(asm.R1, asm.R0),
			asm.Mov.Reg(asm.R2, base),
			asm.Add.Imm(asm.R2, off),
			asm.Mov.Imm(asm.R3, size),
			asm.Mov.Imm(asm.R4, 0),
			asm.FnGetTaskStack.Call(),
		)
		return
	}
	iter := e.p.TracepointIter != 0
	if iter {
		// The iterator first (the reader drops it when the unwinding
		// found it too).
		e.emit(
			asm.LoadImm(asm.R1, int64(e.p.TracepointIter), asm.DWord),
			asm.StoreMem(base, int16(off), asm.R1, asm.DWord),
		)
		off, size = off+8, size-8
	}
	e.emit(
		asm.Mov.Reg(asm.R1, rCtx),
		asm.Mov.Reg(asm.R2, base),
		asm.Add.Imm(asm.R2, off),
		asm.Mov.Imm(asm.R3, size),
		asm.Mov.Imm(asm.R4, 0),
		asm.FnGetStack.Call(),
	)
	if iter {
		failed := e.newLabel()
		e.emit(
			asm.JSLT.Imm(asm.R0, 0, failed),
			asm.Add.Imm(asm.R0, 8),
		)
		e.mark(failed)
	}
}

// hasRef reports whether x reads a variable reference.
func (x *HistExpr) hasRef() bool {
	if x == nil {
		return false
	}
	return x.Ref != 0 || x.X.hasRef() || x.Y.hasRef()
}

// histKey stores one key field at rBuf+key+k.Offset; area is the
// histogram's scratch area (an expression's temporaries).
func (e *emitter) histKey(k HistKey, key int16, area int) error {
	dst := key + int16(k.Offset)
	if k.Expr != nil {
		if err := e.histExpr(k.Expr, area, 0); err != nil {
			return err
		}
		return e.storeKey(dst, k.Size)
	}
	if k.CPU {
		e.emit(asm.LoadMem(asm.R1, rBuf, 8, asm.Word))
		return e.storeKey(dst, k.Size)
	}
	if k.Stack {
		e.kernelStack(rBuf, int32(dst), int32(k.Size))
		return nil
	}
	if k.Timestamp {
		e.emit(asm.LoadMem(asm.R1, rBuf, 0, asm.DWord))
		if k.Usecs {
			e.emit(asm.Add.Imm(asm.R1, 500), asm.Div.Imm(asm.R1, 1000))
		}
		return e.storeKey(dst, k.Size)
	}
	fl := k.Field
	switch fl.Class {
	case filter.StaticString, filter.DynString, filter.RelDynString:
		return e.histString(fl, dst)
	}
	if err := e.loadField(fl); err != nil {
		return err
	}
	if fl.Signed {
		e.signExtend(asm.R1, fl.Size)
	}
	if k.Log2 {
		e.log2(k.Log2Wraps)
	}
	if k.Bucket != 0 {
		e.emit(
			asm.LoadImm(asm.R2, int64(k.Bucket), asm.DWord),
			asm.Div.Reg(asm.R1, asm.R2),
			asm.Mul.Reg(asm.R1, asm.R2),
		)
	}
	return e.storeKey(dst, k.Size)
}

// storeKey stores the low size bytes of R1 at rBuf+off.
func (e *emitter) storeKey(off int16, size int) error {
	sz, err := sizeOf(size)
	if err != nil {
		return err
	}
	e.emit(asm.StoreMem(rBuf, off, asm.R1, sz))
	return nil
}

// log2 turns R1 into ilog2(roundup_pow_of_two(R1)): 0 for 0 and 1, else
// the bit length of R1-1; with wraps, 0 for R1 above 2^63 too.
func (e *emitter) log2(wraps bool) {
	done := e.newLabel()
	e.emit(
		asm.Mov.Imm(asm.R2, 0),
		asm.JLE.Imm(asm.R1, 1, done),
	)
	if wraps {
		e.emit(
			asm.LoadImm(asm.R3, math.MinInt64, asm.DWord),
			asm.JGT.Reg(asm.R1, asm.R3, done),
		)
	}
	e.emit(asm.Add.Imm(asm.R1, -1))
	for _, sh := range []int32{32, 16, 8, 4, 2, 1} {
		skip := e.newLabel()
		e.emit(
			asm.Mov.Reg(asm.R3, asm.R1),
			asm.RSh.Imm(asm.R3, sh),
			asm.JEq.Imm(asm.R3, 0, skip),
			asm.Mov.Reg(asm.R1, asm.R3),
			asm.Add.Imm(asm.R2, sh),
		)
		e.mark(skip)
	}
	e.emit(asm.Add.Reg(asm.R2, asm.R1))
	e.mark(done)
	e.emit(asm.Mov.Reg(asm.R1, asm.R2))
}

// histString copies a string field of the record into the key at
// rBuf+dst: as the kernel's add_to_key, the string's bytes up to its
// length (a __data_loc string's stored length, a char array's size) and
// at most filter.MaxStringLen-1 of them, stopping at a NUL; the key was
// zeroed.
func (e *emitter) histString(fl *filter.Field, dst int16) error {
	return e.copyString(fl, rBuf, rBuf, dst, filter.MaxStringLen)
}

// copyString copies string field fl of the record whose scratch value
// src points to into to+dst: its bytes up to its length and a NUL, at
// most room bytes in all; R0 is then the bytes written, the NUL
// included.
func (e *emitter) copyString(fl *filter.Field, src, to asm.Register, dst int16, room int) error {
	max := int32(room - 1)
	switch fl.Class {
	case filter.StaticString:
		// R3 = the array, R2 = its size.
		e.emit(
			asm.Mov.Reg(asm.R3, src),
			asm.Add.Imm(asm.R3, int32(recOff(e.fieldPos(fl.Offset)))),
		)
		if fl.Size == 0 {
			// A char array without a size: the string up to its NUL.
			e.emit(asm.Mov.Imm(asm.R2, max))
		} else {
			e.emit(asm.Mov.Imm(asm.R2, int32(min(fl.Size, int(max)))))
		}
	default:
		e.emit(
			asm.LoadMem(asm.R1, src, recOff(e.fieldPos(fl.Offset)), asm.Word),
			asm.Mov.Reg(asm.R2, asm.R1),
			asm.RSh.Imm(asm.R2, 16),
			asm.And.Imm(asm.R1, 0xffff),
		)
		if fl.Class == filter.RelDynString {
			e.emit(asm.Add.Imm(asm.R1, int32(e.fieldPos(fl.Offset)+fl.Size)))
		}
		// The string must lie in the record as built.
		bad := e.newLabel()
		ok := e.newLabel()
		e.emit(
			asm.JGT.Imm(asm.R1, int32(e.filterRec), bad),
			asm.Mov.Reg(asm.R3, src),
			asm.Add.Imm(asm.R3, fetchargs.HeaderSize),
			asm.Add.Reg(asm.R3, asm.R1),
			asm.JLE.Imm(asm.R2, max, ok),
			asm.Mov.Imm(asm.R2, max),
			asm.Ja.Label(ok),
		)
		e.mark(bad)
		e.emit(asm.Mov.Reg(asm.R3, src), asm.Mov.Imm(asm.R2, 0))
		e.mark(ok)
	}
	// bpf_probe_read_kernel_str(key, len+1, str) copies up to len bytes
	// and ends them with a NUL; with len 0 it writes the NUL alone.
	e.emit(
		asm.Add.Imm(asm.R2, 1),
		asm.Mov.Reg(asm.R1, to),
		asm.Add.Imm(asm.R1, int32(dst)),
		asm.FnProbeReadKernelStr.Call(),
	)
	return nil
}
