package bpfcode

import (
	"fmt"
	"math/bits"

	"github.com/cilium/ebpf/asm"

	"github.com/ktrace-dev/ktrace/filter"
)

// Variables, expressions and actions of hist triggers, run where the event
// happens as the kernel's event_hist_trigger runs them:
//
//  1. the references to other histograms' variables are resolved with
//     this hit's key (resolve_var_refs, self false): the other map's
//     entry for the key must exist and the variable be set, else the hit
//     is not counted; a reference that is an operand of an expression
//     reads the variable once (it is unset after);
//  2. the entry is found or created and updated: sums, and each
//     variable's new value, which marks it set;
//  3. the references to this histogram's own variables are resolved
//     (self true), and when they all are, the actions run: an onmatch
//     trace() builds the synthetic event's record, runs that event's own
//     hist triggers and filter, and writes it to the trace.

// HistLayout places an entry's parts in a histogram map's value: the
// hitcount, the sums, the variables' values, one "set" word per
// variable, the values onmax() and onchange() follow, the fields save()
// keeps, the string variables' strings, and the comm of the task that
// created the entry.
type HistLayout struct {
	NVals, NVars, NTrack int
	// Saves says, per saved field, whether it is a string (StrVarLen
	// bytes) or a number (8 bytes).
	Saves []bool
	// StrVars says, per variable, whether it holds a string (nil: none
	// does): its StrVarLen bytes are at StrOff, and a reference to it
	// reads their address.
	StrVars []bool
	// StackVars says, per variable, whether it holds a kernel stack
	// (nil: none does): StackVarLen bytes at StrOff, the length in bytes
	// of the frames saved and then the frames, innermost first; a
	// reference to it reads their address.
	StackVars []bool
}

// StackVarFrames is how many return addresses a stack variable keeps: as
// many as a stacktrace key's (HistStackRaw in package tracer), the frames
// of the BPF path among them; whoever prints them takes those off.
const StackVarFrames = 32

// StackVarLen is a stack variable's room: its length word and its frames.
const StackVarLen = 8 + 8*StackVarFrames

// Size is the map's value size.
func (l HistLayout) Size() int { return l.CommOff() + 16 }

// VarOff is where variable i's value is.
func (l HistLayout) VarOff(i int) int { return 8*(1+l.NVals) + 8*i }

// SetOff is where variable i's set word is (non-zero: set).
func (l HistLayout) SetOff(i int) int { return 8*(1+l.NVals) + 8*l.NVars + 8*i }

// TrackOff is where tracked value i is; SaveOff where saved field i is.
func (l HistLayout) TrackOff(i int) int { return 8*(1+l.NVals) + 16*l.NVars + 8*i }
func (l HistLayout) SaveOff(i int) int {
	off := l.TrackOff(l.NTrack)
	for _, str := range l.Saves[:i] {
		if str {
			off += StrVarLen
		} else {
			off += 8
		}
	}
	return off
}

// StrOff is where string or stack variable i's bytes are.
func (l HistLayout) StrOff(i int) int {
	off := l.SaveOff(len(l.Saves))
	for j := 0; j < i; j++ {
		switch {
		case l.StrVar(j):
			off += StrVarLen
		case l.StackVar(j):
			off += StackVarLen
		}
	}
	return off
}

// StrVar reports whether variable i holds a string.
func (l HistLayout) StrVar(i int) bool { return i >= 0 && i < len(l.StrVars) && l.StrVars[i] }

// StackVar reports whether variable i holds a kernel stack.
func (l HistLayout) StackVar(i int) bool { return i >= 0 && i < len(l.StackVars) && l.StackVars[i] }

// CommOff is where the comm is.
func (l HistLayout) CommOff() int { return l.StrOff(max(len(l.StrVars), len(l.StackVars))) }

// HistExpr is a value computed from the record: a leaf (a field, the
// timestamp, the CPU, a constant or a variable reference) or an operator
// on one or two expressions.
type HistExpr struct {
	// Op is 0 for a leaf, '+', '-', '*', '/' on X and Y, or 'u' (unary
	// minus) on X.
	Op   byte
	X, Y *HistExpr
	// Field is a record field, read and sign-extended as the kernel's
	// hist_field_s32 and friends read it.
	Field *filter.Field
	// Timestamp is common_timestamp (in microseconds when Usecs), CPU
	// common_cpu.
	Timestamp, Usecs, CPU bool
	// IsConst is a numeric constant, Const its value.
	IsConst bool
	Const   uint64
	// Ref, when not 0, is reference Ref-1 of the histogram (Hist.Refs).
	Ref int
	// Str is a string field of the record: only a synthetic event's
	// string field, a save() and a string variable take it (copied, not
	// computed).
	Str *filter.Field
	// Stack is the task's kernel stack (common_stacktrace): only a
	// variable takes it (a stack variable, HistLayout.StackVars).
	Stack bool
}

// strField reports whether f is a string the hist stage copies: an array
// in the record or a __data_loc string.
func strField(f *filter.Field) bool {
	switch f.Class {
	case filter.StaticString, filter.DynString, filter.RelDynString:
		return true
	}
	return false
}

// refLayout is the layout of the histogram that holds the variable of
// reference r of h.
func (h *Hist) refLayout(r HistRef) HistLayout {
	if r.Self {
		return h.Layout()
	}
	return r.Layout
}

// strRef reports whether expression leaf x reads a string variable.
func (h *Hist) strRef(x *HistExpr) bool {
	if x == nil || x.Op != 0 || x.Ref < 1 || x.Ref > len(h.Refs) {
		return false
	}
	r := h.Refs[x.Ref-1]
	return h.refLayout(r).StrVar(r.Var)
}

// stackRef reports whether expression leaf x reads a stack variable.
func (h *Hist) stackRef(x *HistExpr) bool {
	if x == nil || x.Op != 0 || x.Ref < 1 || x.Ref > len(h.Refs) {
		return false
	}
	r := h.Refs[x.Ref-1]
	if r.Self {
		return r.Var >= 0 && r.Var < len(h.Vars) && h.stackVarExpr(h.Vars[r.Var])
	}
	return r.Layout.StackVar(r.Var)
}

// stackVarExpr reports whether variable expression v makes a stack
// variable: it saves the stack, or copies another histogram's stack
// variable. (A copy of one of h's own variables is stackRef's, which
// looks no further, so that Layout does not call itself.)
func (h *Hist) stackVarExpr(v *HistExpr) bool {
	if v == nil || v.Op != 0 {
		return false
	}
	if v.Stack {
		return true
	}
	if v.Ref < 1 || v.Ref > len(h.Refs) {
		return false
	}
	r := h.Refs[v.Ref-1]
	return !r.Self && r.Layout.StackVar(r.Var)
}

// HistRef is a histogram's reference to a variable.
type HistRef struct {
	// Map is the histogram that holds the variable, Layout its value
	// layout and Var the variable's index there. Self is a reference to
	// one of this histogram's own variables (Map is then unused).
	Map    asm.FDer
	Layout HistLayout
	Var    int
	Self   bool
	// ReadOnce unsets the variable once read (an operand of an
	// expression).
	ReadOnce bool
}

// HistAction is a handler with its action. An onmatch() handler runs it
// every time; onmax() ('>') and onchange ('!') when the value of
// reference TrackRef-1 is above (differs from) tracked value TrackIdx,
// which it then becomes. The action is trace() (Target set: Params, in
// the synthetic event's field order, make its record) or save() (Save:
// the histogram's Saves are stored).
type HistAction struct {
	Track    byte
	TrackRef int
	TrackIdx int
	Save     bool
	Params   []*HistExpr
	Target   *SynthTarget
	// Snapshot is a snapshot() action: the kernel's conditional
	// snapshot, taken when the new value also beats (or differs from)
	// the one value the whole trace follows.
	Snapshot *HistSnapshot
}

// HistSnapshot is the state of a snapshot() action.
type HistSnapshot struct {
	// Global is a BPF_MAP_TYPE_ARRAY of one value of
	// HistSnapshotSize(KeySize) bytes: the value of the last snapshot
	// (u64), 1 once one was taken (u64), the comm of the hit that took
	// it (16 bytes) and its key.
	Global asm.FDer
	// Queue is the snapshot triggers' queue (EventTrigger.Queue).
	Queue asm.FDer
}

// HistSnapshotSize is the size of a HistSnapshot's Global value for a
// histogram with keys of keySize bytes.
func HistSnapshotSize(keySize int) int { return 32 + keySize }

// SynthTarget is a synthetic event as hist actions generate it.
type SynthTarget struct {
	// Fields are the record's fields after the common ones, in order:
	// each takes 8 bytes (its value's low Size bytes are stored).
	Fields []SynthField
	// EventID is the event's common_type; Num is the number the record's
	// header carries (SynthHeader).
	EventID uint16
	Num     uint32
	// Ring is the ring buffer the records go to; Scratch a
	// BPF_MAP_TYPE_ARRAY with one value per possible CPU of at least
	// SynthScratch(len(Fields)) bytes, where the record is built.
	Ring, Scratch asm.FDer
	// Switch is a BPF_MAP_TYPE_ARRAY of one u32: 0 when the event is not
	// enabled, and its records are not written (its hist triggers still
	// count them).
	Switch asm.FDer
	// Filter is the event's filter (nil: none); Hists its hist triggers.
	Filter *filter.Filter
	Hists  []*Hist
	// TracingOn, when set, is tracing_on (ProbeProgram.TracingOn).
	TracingOn asm.FDer
	// Preempt is the preempt depth its records show above the record
	// of the event that generated them: 2 on 6.1, 3 on 6.12 (seen in
	// the VM: a kprobe's "....." generates "...2." and "...3.", a
	// syscall event's "...1." "...3." and "...4.", sched_switch's
	// "d..2." "d..4." and "d..5.").
	Preempt uint8
	// Eprobes are the enabled event probes on the synthetic event. Each
	// runs on every record generated, as the kernel's event probe
	// trigger does: before the event's filter and whether or not the
	// event is enabled.
	Eprobes []InlineProbe
}

// InlineProbe is an event probe whose attached event has no program of
// its own (a synthetic event): its program (an EventRecord one) is
// compiled as a function of the programs that generate the event's
// records, called with the generated record as its context. Maps are its
// own: its Scratch must be no map the generating program builds its
// records in.
type InlineProbe struct {
	Prog *ProbeProgram
	Maps *Maps
}

// SynthField is one field of a synthetic event's record: a number of
// Size bytes in an 8-byte slot, or a string: a static one (char[N]) in a
// StrVarLen-byte slot, a dynamic one (char[], Dynamic) a __data_loc word
// in an 8-byte slot and its bytes after the fixed part.
type SynthField struct {
	Size            int
	String, Dynamic bool
	// Stack is a kernel stack (unsigned long[]): a __data_loc word in an
	// 8-byte slot, and after the fixed part a length word and room for
	// StackVarFrames frames, the word's offset past the length word.
	Stack bool
}

// StrVarLen is the kernel's STR_VAR_LEN_MAX: a string field's room, NUL
// included.
const StrVarLen = 256

// SynthLayout places a synthetic record's fields: offs are their offsets
// from the record's start (after the 8 bytes of common fields), data the
// offsets of the dynamic strings' bytes (one StrVarLen area each, in
// field order), size the record's size with them.
func SynthLayout(fields []SynthField) (offs, data []int, size int) {
	off := 8
	for _, f := range fields {
		offs = append(offs, off)
		if f.String && !f.Dynamic {
			off += StrVarLen
		} else {
			off += 8
		}
	}
	for _, f := range fields {
		switch {
		case f.String && f.Dynamic:
			data = append(data, off)
			off += StrVarLen
		case f.Stack:
			data = append(data, off)
			off += StackVarLen
		default:
			data = append(data, 0)
		}
	}
	return offs, data, off
}

// SynthScratch is the scratch value a synthetic event of these fields
// needs.
func SynthScratch(fields []SynthField) int {
	_, _, size := SynthLayout(fields)
	return HistScratch(size)
}

// The parts of a histogram's area (HistAreaSize) after the key and the
// initial value.
const (
	// histKeyMax is the kernel's HIST_KEY_SIZE_MAX (384) with a
	// stacktrace key's room for the frames the BPF path adds
	// (HistStackRaw in package tracer against HIST_STACKTRACE_DEPTH),
	// and the most a BPF hash map's key may be (MAX_BPF_STACK).
	histKeyMax   = 512
	histValueMax = 2048
	histRefsOff  = histKeyMax + histValueMax
	histTempsOff = histRefsOff + 8*MaxHistRefs
	histParamOff = histTempsOff + 8*histTempDepth
	// MaxHistRefs is TRACING_MAP_VARS_MAX: references of one histogram.
	MaxHistRefs = 16
	// MaxSynthParams bounds a trace() action's parameters.
	MaxSynthParams = 16
	histTempDepth  = 8
)

// stkSaveBuf keeps the probe's rBuf while a synthetic record is built.
const stkSaveBuf = -104

// MaxSynthDepth bounds how deep synthetic events generate others (a
// synthetic event's histogram with an onmatch() action generates one
// more, inline in the same program).
const MaxSynthDepth = 3

// saveBufSlot and saveValSlot keep rBuf and the entry (rVal) while the
// record of a synthetic event generated at depth d is built: d 0 by the
// probe's histograms, d 1 by that synthetic event's, and so on.
func saveBufSlot(d int) int16 {
	if d == 0 {
		return stkSaveBuf
	}
	return int16(-208 - 16*(d-1))
}

func saveValSlot(d int) int16 {
	if d == 0 {
		return stkSaveVal
	}
	return int16(-216 - 16*(d-1))
}

// checkExpr reports whether the hist stage can compute x.
func (h *Hist) checkExpr(x *HistExpr, depth int) error {
	if x == nil {
		return fmt.Errorf("empty expression: %w", ErrHistUnsupported)
	}
	if depth >= histTempDepth {
		return fmt.Errorf("expression too deep: %w", ErrHistUnsupported)
	}
	switch x.Op {
	case 0:
		switch {
		case x.Str != nil:
			return fmt.Errorf("string %s in an expression: %w", x.Str.Name, ErrHistUnsupported)
		case x.Ref != 0:
			if x.Ref < 0 || x.Ref > len(h.Refs) {
				return fmt.Errorf("reference %d of %d: %w", x.Ref, len(h.Refs), ErrHistUnsupported)
			}
			if h.strRef(x) {
				return fmt.Errorf("string variable in an expression: %w", ErrHistUnsupported)
			}
			if h.stackRef(x) {
				return fmt.Errorf("stack variable in an expression: %w", ErrHistUnsupported)
			}
		case x.Stack:
			return fmt.Errorf("common_stacktrace in an expression: %w", ErrHistUnsupported)
		case x.Field != nil:
			if x.Field.Class != filter.Numeric && x.Field.Class != filter.PtrString {
				return fmt.Errorf("string %s in an expression: %w", x.Field.Name, ErrHistUnsupported)
			}
			if _, err := sizeOf(x.Field.Size); err != nil {
				return fmt.Errorf("field %s of %d bytes: %w", x.Field.Name, x.Field.Size, ErrHistUnsupported)
			}
		case x.Timestamp, x.CPU, x.IsConst:
		default:
			return fmt.Errorf("expression leaf without a value: %w", ErrHistUnsupported)
		}
		return nil
	case 'u':
		return h.checkExpr(x.X, depth+1)
	case '+', '-', '*', '/':
		if err := h.checkExpr(x.X, depth+1); err != nil {
			return err
		}
		return h.checkExpr(x.Y, depth+1)
	}
	return fmt.Errorf("operator %q: %w", x.Op, ErrHistUnsupported)
}

// checkVars checks h's variables, references and actions.
func (h *Hist) checkVars() error {
	if len(h.Refs) > MaxHistRefs {
		return fmt.Errorf("%d variable references: %w", len(h.Refs), ErrHistUnsupported)
	}
	for _, r := range h.Refs {
		if r.Self {
			if r.Var < 0 || r.Var >= len(h.Vars) {
				return fmt.Errorf("reference to variable %d of %d: %w", r.Var, len(h.Vars), ErrHistUnsupported)
			}
			continue
		}
		if r.Map == nil || r.Var < 0 || r.Var >= r.Layout.NVars {
			return fmt.Errorf("reference to a variable of another histogram without its map: %w", ErrHistUnsupported)
		}
	}
	lay := h.Layout()
	for i, v := range h.Vars {
		if v != nil && v.Op == 0 && v.Str != nil {
			if !strField(v.Str) {
				return fmt.Errorf("string variable of %s: %w", v.Str.Name, ErrHistUnsupported)
			}
			continue
		}
		if lay.StackVar(i) {
			continue
		}
		if err := h.checkExpr(v, 0); err != nil {
			return err
		}
	}
	for _, v := range h.Vals {
		if v.Expr != nil {
			if err := h.checkExpr(v.Expr, 0); err != nil {
				return err
			}
		}
	}
	for _, s := range h.Saves {
		if s.Str != nil {
			if strField(s.Str) {
				continue
			}
			return fmt.Errorf("saved string %s: %w", s.Str.Name, ErrHistUnsupported)
		}
		if err := h.checkExpr(s, 0); err != nil {
			return err
		}
	}
	for _, a := range h.Actions {
		if a.Track != 0 && (a.TrackRef < 1 || a.TrackRef > len(h.Refs) || a.TrackIdx < 0 || a.TrackIdx >= h.NTrack) {
			return fmt.Errorf("tracked value: %w", ErrHistUnsupported)
		}
		if a.Save {
			continue
		}
		if sn := a.Snapshot; sn != nil {
			if a.Track == 0 || sn.Global == nil || sn.Queue == nil {
				return fmt.Errorf("snapshot() without its handler or maps: %w", ErrHistUnsupported)
			}
			continue
		}
		t := a.Target
		if t == nil || t.Ring == nil || t.Scratch == nil || t.Switch == nil {
			return fmt.Errorf("synthetic event without its maps: %w", ErrHistUnsupported)
		}
		if len(a.Params) != len(t.Fields) || len(a.Params) > MaxSynthParams {
			return fmt.Errorf("%d parameters for %d fields: %w", len(a.Params), len(t.Fields), ErrHistUnsupported)
		}
		for i, p := range a.Params {
			f := t.Fields[i]
			if f.Stack {
				if !h.stackRef(p) {
					return fmt.Errorf("a stack field fed by no stack variable: %w", ErrHistUnsupported)
				}
				continue
			}
			if h.stackRef(p) {
				return fmt.Errorf("a stack variable passed to a field that is no stack: %w", ErrHistUnsupported)
			}
			if f.String {
				if h.strRef(p) {
					continue
				}
				if p.Str == nil {
					return fmt.Errorf("a string field fed by a number: %w", ErrHistUnsupported)
				}
				if !strField(p.Str) {
					return fmt.Errorf("string field %s: %w", p.Str.Name, ErrHistUnsupported)
				}
				continue
			}
			if err := h.checkExpr(p, 0); err != nil {
				return err
			}
			if _, err := sizeOf(f.Size); err != nil {
				return fmt.Errorf("synthetic field of %d bytes: %w", f.Size, ErrHistUnsupported)
			}
		}
		if t.Filter != nil {
			if err := CheckFilter(t.Filter); err != nil {
				return err
			}
		}
		for _, sh := range t.Hists {
			if err := CheckHist(sh); err != nil {
				return err
			}
		}
	}
	return nil
}

// histExpr computes x into R1. Temporaries live at rBuf+area+
// histTempsOff, one per depth.
func (e *emitter) histExpr(x *HistExpr, area, depth int) error {
	tmp := int16(area + histTempsOff + 8*depth)
	switch x.Op {
	case 0:
		switch {
		case x.Str != nil:
			return fmt.Errorf("string %s in an expression: %w", x.Str.Name, ErrHistUnsupported)
		case x.Ref != 0:
			e.emit(asm.LoadMem(asm.R1, rBuf, int16(area+histRefsOff+8*(x.Ref-1)), asm.DWord))
		case x.Field != nil:
			if err := e.loadField(x.Field); err != nil {
				return err
			}
			if x.Field.Signed {
				e.signExtend(asm.R1, x.Field.Size)
			}
		case x.Timestamp:
			e.emit(asm.LoadMem(asm.R1, rBuf, 0, asm.DWord))
			if x.Usecs {
				e.emit(asm.Add.Imm(asm.R1, 500), asm.Div.Imm(asm.R1, 1000))
			}
		case x.CPU:
			e.emit(asm.LoadMem(asm.R1, rBuf, 8, asm.Word))
		case x.IsConst:
			e.emit(asm.LoadImm(asm.R1, int64(x.Const), asm.DWord))
		}
		return nil
	case 'u':
		if err := e.histExpr(x.X, area, depth+1); err != nil {
			return err
		}
		e.emit(asm.Neg.Imm(asm.R1, 0))
		return nil
	}
	if err := e.histExpr(x.X, area, depth+1); err != nil {
		return err
	}
	e.emit(asm.StoreMem(rBuf, tmp, asm.R1, asm.DWord))
	if x.Op == '/' && x.Y.Op == 0 && x.Y.IsConst {
		e.emit(asm.LoadMem(asm.R1, rBuf, tmp, asm.DWord))
		e.divConst(x.Y.Const)
		return nil
	}
	if err := e.histExpr(x.Y, area, depth+1); err != nil {
		return err
	}
	e.emit(
		asm.Mov.Reg(asm.R2, asm.R1),
		asm.LoadMem(asm.R1, rBuf, tmp, asm.DWord),
	)
	switch x.Op {
	case '+':
		e.emit(asm.Add.Reg(asm.R1, asm.R2))
	case '-':
		e.emit(asm.Sub.Reg(asm.R1, asm.R2))
	case '*':
		e.emit(asm.Mul.Reg(asm.R1, asm.R2))
	case '/':
		// hist_field_div: dividing by 0 gives -1.
		nz := e.newLabel()
		done := e.newLabel()
		e.emit(
			asm.JNE.Imm(asm.R2, 0, nz),
			asm.Mov.Imm(asm.R1, -1),
			asm.Ja.Label(done),
		)
		e.mark(nz)
		e.emit(asm.Div.Reg(asm.R1, asm.R2))
		e.mark(done)
	}
	return nil
}

// divConst divides R1 by the constant c as the kernel's divisions by a
// constant do: a shift for a power of two, a multiplication and a shift
// for a dividend below 2^20 when c is at most 2^20 (which rounds up), a
// division otherwise.
func (e *emitter) divConst(c uint64) {
	const shift = 20
	switch {
	case c != 0 && c&(c-1) == 0:
		e.emit(asm.RSh.Imm(asm.R1, int32(bits.TrailingZeros64(c))))
	case c > 1<<shift || c == 0:
		e.emit(asm.LoadImm(asm.R2, int64(c), asm.DWord), asm.Div.Reg(asm.R1, asm.R2))
	default:
		mult := uint64(1<<shift) / c
		big := e.newLabel()
		done := e.newLabel()
		e.emit(
			asm.LoadImm(asm.R2, int64(c), asm.DWord),
			asm.JGE.Imm(asm.R1, 1<<shift, big),
			asm.Mul.Imm(asm.R1, int32(mult)),
			asm.Add.Imm(asm.R1, 1<<shift-1),
			asm.RSh.Imm(asm.R1, shift),
			asm.Ja.Label(done),
		)
		e.mark(big)
		e.emit(asm.Div.Reg(asm.R1, asm.R2))
		e.mark(done)
	}
}

// resolveRefs emits resolve_var_refs for the references of h to other
// histograms (self false) or to its own variables (self true), with the
// key at rBuf+area: each value goes to its slot, and a failure jumps to
// fail. For its own variables, rVal is the entry.
func (e *emitter) resolveRefs(h *Hist, area int, self bool, fail string) error {
	for i, r := range h.Refs {
		if r.Self != self {
			continue
		}
		ent := rVal
		lay := h.Layout()
		if !self {
			if err := e.mapPtr(asm.R1, r.Map); err != nil {
				return err
			}
			e.emit(
				asm.Mov.Reg(asm.R2, rBuf),
				asm.Add.Imm(asm.R2, int32(area)),
				asm.FnMapLookupElem.Call(),
				asm.JEq.Imm(asm.R0, 0, fail),
			)
			ent = asm.R0
			lay = r.Layout
		}
		e.emit(
			asm.LoadMem(asm.R1, ent, int16(lay.SetOff(r.Var)), asm.DWord),
			asm.JEq.Imm(asm.R1, 0, fail),
		)
		if lay.StrVar(r.Var) || lay.StackVar(r.Var) {
			// A string or stack variable: the address of its bytes in
			// the entry (the kernel's var_ref_vals hold the pointer).
			e.emit(
				asm.Mov.Reg(asm.R1, ent),
				asm.Add.Imm(asm.R1, int32(lay.StrOff(r.Var))),
			)
		} else {
			e.emit(asm.LoadMem(asm.R1, ent, int16(lay.VarOff(r.Var)), asm.DWord))
		}
		e.emit(asm.StoreMem(rBuf, int16(area+histRefsOff+8*i), asm.R1, asm.DWord))
		if r.ReadOnce && !self {
			e.emit(zeroDWord(ent, int16(lay.SetOff(r.Var))))
		}
	}
	return nil
}

// histVars stores the variables' new values in the entry at rVal and
// marks them set (hist_trigger_elt_update's tracing_map_set_var).
func (e *emitter) histVars(h *Hist, area int) error {
	lay := h.Layout()
	for i, v := range h.Vars {
		if lay.StackVar(i) {
			if err := e.stackVar(h, v, lay.StrOff(i), area); err != nil {
				return err
			}
			e.emit(
				asm.Mov.Imm(asm.R1, 1),
				asm.StoreMem(rVal, int16(lay.SetOff(i)), asm.R1, asm.DWord),
			)
			continue
		}
		if lay.StrVar(i) {
			// The string, up to its NUL, in the entry.
			if err := e.copyString(v.Str, rBuf, rVal, int16(lay.StrOff(i)), StrVarLen); err != nil {
				return err
			}
			e.emit(
				asm.Mov.Imm(asm.R1, 1),
				asm.StoreMem(rVal, int16(lay.SetOff(i)), asm.R1, asm.DWord),
			)
			continue
		}
		if err := e.histExpr(v, area, 0); err != nil {
			return err
		}
		e.emit(
			asm.StoreMem(rVal, int16(lay.VarOff(i)), asm.R1, asm.DWord),
			asm.Mov.Imm(asm.R1, 1),
			asm.StoreMem(rVal, int16(lay.SetOff(i)), asm.R1, asm.DWord),
		)
	}
	return nil
}

// stackVar stores stack variable v at rVal+off: the task's kernel stack
// (kernelStack, which zeroes what it does not fill) after its
// length in bytes, or a copy of the stack variable v refers to.
func (e *emitter) stackVar(h *Hist, v *HistExpr, off, area int) error {
	if v.Stack {
		ok := e.newLabel()
		e.kernelStack(rVal, int32(off+8), 8*StackVarFrames)
		e.emit(
			asm.JSGE.Imm(asm.R0, 0, ok),
			asm.Mov.Imm(asm.R0, 0),
		)
		e.mark(ok)
		e.emit(asm.StoreMem(rVal, int16(off), asm.R0, asm.DWord))
		return nil
	}
	if !h.stackRef(v) {
		return fmt.Errorf("stack variable of no stack: %w", ErrHistUnsupported)
	}
	// The referenced entry's bytes, by the address the reference holds.
	e.emit(
		asm.Mov.Reg(asm.R1, rVal),
		asm.Add.Imm(asm.R1, int32(off)),
		asm.Mov.Imm(asm.R2, StackVarLen),
		asm.LoadMem(asm.R3, rBuf, int16(area+histRefsOff+8*(v.Ref-1)), asm.DWord),
		asm.FnProbeReadKernel.Call(),
	)
	return nil
}

// stkSaveVal keeps the entry (rVal) while a synthetic record is built.
const stkSaveVal = -120

// histActions runs h's actions once its own references are resolved
// (hist_trigger_actions), with rVal the entry.
func (e *emitter) histActions(h *Hist, area int) error {
	lay := h.Layout()
	for _, a := range h.Actions {
		skip := e.newLabel()
		if a.Track != 0 {
			// ontrack_action: the new value against the tracked one.
			off := int16(lay.TrackOff(a.TrackIdx))
			e.emit(
				asm.LoadMem(asm.R1, rBuf, int16(area+histRefsOff+8*(a.TrackRef-1)), asm.DWord),
				asm.LoadMem(asm.R2, rVal, off, asm.DWord),
			)
			if a.Track == '>' {
				e.emit(asm.JLE.Reg(asm.R1, asm.R2, skip))
			} else {
				e.emit(asm.JEq.Reg(asm.R1, asm.R2, skip))
			}
			e.emit(asm.StoreMem(rVal, off, asm.R1, asm.DWord))
		}
		if a.Snapshot != nil {
			if err := e.histSnapshot(h, a, area); err != nil {
				return err
			}
		} else if a.Save {
			for i, x := range h.Saves {
				if x.Str != nil {
					// save_track_data_vars: the string, up to its NUL,
					// in the entry.
					if err := e.copyString(x.Str, rBuf, rVal, int16(lay.SaveOff(i)), StrVarLen); err != nil {
						return err
					}
					continue
				}
				if err := e.histExpr(x, area, 0); err != nil {
					return err
				}
				e.emit(asm.StoreMem(rVal, int16(lay.SaveOff(i)), asm.R1, asm.DWord))
			}
		} else {
			e.emit(asm.StoreMem(asm.R10, saveValSlot(e.synthDepth), rVal, asm.DWord))
			if err := e.synthAction(h, a, area); err != nil {
				return err
			}
			e.emit(asm.LoadMem(rVal, asm.R10, saveValSlot(e.synthDepth), asm.DWord))
		}
		e.mark(skip)
	}
	return nil
}

// synthAction generates a synthetic event: the parameters are computed
// into the probe's area, then the record is built in this CPU's value of
// the event's scratch map, which becomes rBuf until the record is done.
func (e *emitter) synthAction(h *Hist, a *HistAction, area int) error {
	t := a.Target
	for i, p := range a.Params {
		if p.Str != nil {
			continue
		}
		if h.strRef(p) || h.stackRef(p) {
			// The string variable's address, for the copy below.
			e.emit(asm.LoadMem(asm.R1, rBuf, int16(area+histRefsOff+8*(p.Ref-1)), asm.DWord))
			e.emit(asm.StoreMem(rBuf, int16(area+histParamOff+8*i), asm.R1, asm.DWord))
			continue
		}
		if err := e.histExpr(p, area, 0); err != nil {
			return err
		}
		e.emit(asm.StoreMem(rBuf, int16(area+histParamOff+8*i), asm.R1, asm.DWord))
	}
	if e.synthDepth >= MaxSynthDepth {
		return fmt.Errorf("synthetic events generated more than %d deep: %w", MaxSynthDepth, ErrHistUnsupported)
	}
	slot := saveBufSlot(e.synthDepth)
	offs, data, size := SynthLayout(t.Fields)
	done := e.newLabel()
	e.emit(asm.StoreMem(asm.R10, slot, rBuf, asm.DWord))
	e.emit(
		asm.LoadMem(asm.R1, asm.R10, stkCPU, asm.Word),
		asm.StoreMem(asm.R10, stkKey, asm.R1, asm.Word),
	)
	if err := e.lookup(t.Scratch, stkKey); err != nil {
		return err
	}
	e.emit(asm.JEq.Imm(asm.R0, 0, done))
	// Header: the hit's time, CPU and comm, the event's number, the
	// task's pid; then the common fields and the values. The time is
	// the generating record's plus 1 ns: the kernel reserves the
	// synthetic record after that one, and the trace orders them so.
	e.emit(
		asm.LoadMem(asm.R1, rBuf, 0, asm.DWord),
		asm.Add.Imm(asm.R1, 1),
		asm.StoreMem(asm.R0, 0, asm.R1, asm.DWord),
		asm.LoadMem(asm.R1, rBuf, 8, asm.Word),
		asm.StoreMem(asm.R0, 8, asm.R1, asm.Word),
		asm.StoreImm(asm.R0, 12, 0, asm.Word),
		asm.LoadMem(asm.R1, rBuf, 16, asm.DWord),
		asm.StoreMem(asm.R0, 16, asm.R1, asm.DWord),
		asm.LoadMem(asm.R1, rBuf, 24, asm.DWord),
		asm.StoreMem(asm.R0, 24, asm.R1, asm.DWord),
		asm.StoreImm(asm.R0, 32, int64(t.Num), asm.Word),
		asm.LoadMem(asm.R1, asm.R10, stkPidTgid, asm.DWord),
		asm.StoreMem(asm.R0, 36, asm.R1, asm.Word),
		asm.StoreMem(asm.R0, recOff(4), asm.R1, asm.Word),
		asm.StoreImm(asm.R0, recOff(0), int64(t.EventID), asm.Half),
		// The generating record's flags, and its preempt depth plus
		// the levels the kernel's path to trace_synth adds.
		asm.LoadMem(asm.R1, rBuf, recOff(2), asm.Byte),
		asm.StoreMem(asm.R0, recOff(2), asm.R1, asm.Byte),
		asm.LoadMem(asm.R1, rBuf, recOff(3), asm.Byte),
		asm.Add.Imm(asm.R1, int32(t.Preempt)),
		asm.StoreMem(asm.R0, recOff(3), asm.R1, asm.Byte),
	)
	for i, f := range t.Fields {
		if f.String || f.Stack {
			continue
		}
		sz, _ := sizeOf(f.Size)
		off := recOff(offs[i])
		e.emit(
			zeroDWord(asm.R0, off),
			asm.LoadMem(asm.R1, rBuf, int16(area+histParamOff+8*i), asm.DWord),
			asm.StoreMem(asm.R0, off, asm.R1, sz),
		)
	}
	e.emit(asm.Mov.Reg(rBuf, asm.R0))
	// The strings, from the generating record (at the saved rBuf): a
	// static string fills its slot up to its NUL (strscpy), a dynamic
	// one its area, its __data_loc word saying where and how long.
	for i, f := range t.Fields {
		if !f.String {
			continue
		}
		e.emit(asm.LoadMem(rTmp9, asm.R10, slot, asm.DWord))
		dst := offs[i]
		if f.Dynamic {
			dst = data[i]
		}
		if a.Params[i].Str == nil {
			// A string variable: bpf_probe_read_kernel_str from the
			// address saved with the parameters.
			e.emit(
				asm.LoadMem(asm.R3, rTmp9, int16(area+histParamOff+8*i), asm.DWord),
				asm.Mov.Imm(asm.R2, StrVarLen),
				asm.Mov.Reg(asm.R1, rBuf),
				asm.Add.Imm(asm.R1, int32(recOff(dst))),
				asm.FnProbeReadKernelStr.Call(),
			)
		} else if err := e.copyString(a.Params[i].Str, rTmp9, rBuf, recOff(dst), StrVarLen); err != nil {
			return err
		}
		if f.Dynamic {
			// R0 is the bytes copied, the NUL included (at least the
			// NUL).
			one := e.newLabel()
			e.emit(
				asm.JSGT.Imm(asm.R0, 0, one),
				asm.Mov.Imm(asm.R0, 1),
				asm.StoreImm(rBuf, recOff(dst), 0, asm.Byte),
			)
			e.mark(one)
			e.emit(
				asm.LSh.Imm(asm.R0, 16),
				asm.Or.Imm(asm.R0, int32(dst)),
				asm.StoreMem(rBuf, recOff(offs[i]), asm.R0, asm.Word),
			)
		}
	}
	// The stacks: the variable's length word and frames copied after the
	// fixed part, the __data_loc word pointing past the length word with
	// the length clamped to the frames' room (trace_stack).
	for i, f := range t.Fields {
		if !f.Stack {
			continue
		}
		e.emit(
			asm.LoadMem(rTmp9, asm.R10, slot, asm.DWord),
			asm.LoadMem(asm.R3, rTmp9, int16(area+histParamOff+8*i), asm.DWord),
			asm.Mov.Imm(asm.R2, StackVarLen),
			asm.Mov.Reg(asm.R1, rBuf),
			asm.Add.Imm(asm.R1, int32(recOff(data[i]))),
			asm.FnProbeReadKernel.Call(),
		)
		fits := e.newLabel()
		e.emit(
			asm.LoadMem(asm.R0, rBuf, recOff(data[i]), asm.DWord),
			asm.JLE.Imm(asm.R0, 8*StackVarFrames, fits),
			asm.Mov.Imm(asm.R0, 8*StackVarFrames),
		)
		e.mark(fits)
		e.emit(
			asm.LSh.Imm(asm.R0, 16),
			asm.Or.Imm(asm.R0, int32(data[i]+8)),
			asm.StoreMem(rBuf, recOff(offs[i]), asm.R0, asm.Word),
		)
	}
	// The synthetic event's own triggers and filter read its record.
	ownFields, filterRec, scratch := e.ownFields, e.filterRec, e.p.ScratchSize
	e.ownFields, e.filterRec, e.p.ScratchSize = false, size, SynthScratch(t.Fields)
	sarea := FilterScratch(size)
	e.synthDepth++
	for _, sh := range t.Hists {
		if err := e.hist(sh, size, sarea); err != nil {
			return err
		}
	}
	e.synthDepth--
	for _, ep := range t.Eprobes {
		if err := e.inlineEprobe(ep); err != nil {
			return err
		}
	}
	if err := e.switchValue(t.Switch, done); err != nil {
		return err
	}
	e.emit(asm.JEq.Imm(asm.R1, 0, done))
	if t.Filter != nil {
		if err := e.filterStageTo(t.Filter, size, done); err != nil {
			return err
		}
	}
	if t.TracingOn != nil {
		on := e.newLabel()
		if err := e.switchValue(t.TracingOn, on); err != nil {
			return err
		}
		e.emit(asm.JEq.Imm(asm.R1, 0, done))
		e.mark(on)
	}
	if err := e.mapPtr(asm.R1, t.Ring); err != nil {
		return err
	}
	e.emit(
		asm.Mov.Reg(asm.R2, rBuf),
		asm.Mov.Imm(asm.R3, int32(SynthHeader+size)),
		asm.Mov.Imm(asm.R4, 0),
		asm.FnRingbufOutput.Call(),
	)
	e.mark(done)
	e.emit(asm.LoadMem(rBuf, asm.R10, slot, asm.DWord))
	e.ownFields, e.filterRec, e.p.ScratchSize = ownFields, filterRec, scratch
	return nil
}

// inlineEprobe calls the program of event probe ep, compiled as a
// function of this program, on the record at rBuf: the probe reads it as
// its attached record and writes its own record through its own maps.
// R6-R9 survive the call; R0-R5 do not.
func (e *emitter) inlineEprobe(ep InlineProbe) error {
	if ep.Prog == nil || !ep.Prog.EventRecord || ep.Prog.Source != nil {
		return fmt.Errorf("fetchargs: compile: an inline event probe needs its own record program")
	}
	e.ninline++
	prefix := fmt.Sprintf("%sE%d_", e.prefix, e.ninline)
	sub, err := compileBody(ep.Prog, ep.Maps, prefix)
	if err != nil {
		return fmt.Errorf("event probe on the synthetic event: %w", err)
	}
	if len(sub.ins) == 0 || sub.ins[0].Symbol() != "" {
		return fmt.Errorf("fetchargs: compile: an inline event probe's body starts with a label")
	}
	name := prefix + "fn"
	body := append(asm.Instructions(nil), sub.ins...)
	body[0] = body[0].WithSymbol(name)
	e.subprogs = append(e.subprogs, subprog{ins: body, fn: ctxFunc(fmt.Sprintf("ktrace_ep%d", e.ninline))})
	e.subprogs = append(e.subprogs, sub.subprogs...)
	e.emit(
		asm.Mov.Reg(asm.R1, rBuf),
		asm.Add.Imm(asm.R1, int32(recOff(0))),
		asm.Call.Label(name),
	)
	return nil
}

// SynthHeader is the header before a synthetic record in the ring: u64
// time, u32 CPU, u32 0, the comm (16 bytes), u32 the event's number
// (SynthTarget.Num), u32 the task's pid. It is the static events' header.
const SynthHeader = 40

// histSnapshot is save_track_data_snapshot: the value that passed the
// entry's handler is checked against the trace's one tracked value
// (cond_snapshot_update); when it passes too, it becomes that value with
// the hit's comm and key, and the swap is queued.
func (e *emitter) histSnapshot(h *Hist, a *HistAction, area int) error {
	skip := e.newLabel()
	e.emit(asm.StoreImm(asm.R10, stkKey, 0, asm.Word))
	if err := e.lookup(a.Snapshot.Global, stkKey); err != nil {
		return err
	}
	e.emit(
		asm.JEq.Imm(asm.R0, 0, skip),
		asm.LoadMem(asm.R1, rBuf, int16(area+histRefsOff+8*(a.TrackRef-1)), asm.DWord),
		asm.LoadMem(asm.R2, asm.R0, 0, asm.DWord),
	)
	if a.Track == '>' {
		e.emit(asm.JLE.Reg(asm.R1, asm.R2, skip))
	} else {
		e.emit(asm.JEq.Reg(asm.R1, asm.R2, skip))
	}
	e.emit(
		asm.StoreMem(asm.R0, 0, asm.R1, asm.DWord),
		asm.Mov.Imm(asm.R1, 1),
		asm.StoreMem(asm.R0, 8, asm.R1, asm.DWord),
		asm.LoadMem(asm.R1, rBuf, 16, asm.DWord), // the comm
		asm.StoreMem(asm.R0, 16, asm.R1, asm.DWord),
		asm.LoadMem(asm.R1, rBuf, 24, asm.DWord),
		asm.StoreMem(asm.R0, 24, asm.R1, asm.DWord),
	)
	for off := 0; off < h.KeySize; off += 8 {
		e.emit(
			asm.LoadMem(asm.R1, rBuf, int16(area+off), asm.DWord),
			asm.StoreMem(asm.R0, int16(32+off), asm.R1, asm.DWord),
		)
	}
	if err := e.pushSnapshot(a.Snapshot.Queue); err != nil {
		return err
	}
	e.mark(skip)
	return nil
}
