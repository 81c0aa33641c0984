package bpfcode

import (
	"fmt"

	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"

	"github.com/ktrace-dev/ktrace/fetchargs"
)

type emitter struct {
	// reserve: the record is built in place in the ring buffer
	// (bpf_ringbuf_reserve/submit), not in the scratch value and copied.
	reserve bool
	p       *ProbeProgram
	maps    *Maps
	// synthDepth is how deep in generated synthetic events the code
	// being emitted runs (histvars.go, saveBufSlot).
	synthDepth int
	ins        asm.Instructions
	label      string
	nlabels    int
	// filterRec is the size of the record the filter stage being
	// emitted reads: the probe's own, or an event probe's attached one.
	filterRec int
	// ownFields: the filter or hist stage being emitted reads an event
	// probe's own record (fieldPos).
	ownFields bool
	// headerComm: the record being built has ktrace's header, whose
	// comm (at offset 16) $comm copies instead of asking the kernel for
	// it again. An event probe's source record has none.
	headerComm bool
	// subprogs are functions of the program (bpf_loop callbacks and
	// inline event probes), appended after its end (program).
	subprogs []subprog
	// prefix starts every label of the code being emitted: an inline
	// event probe's body (inlineEprobe) is emitted apart, and its labels
	// must not meet the program's. ninline numbers those bodies.
	prefix  string
	ninline int
}

// subprog is a function of a program: its instructions, and its BTF
// description (nil: a bpf_loop callback, "long fn(u32 index, void *ctx)").
type subprog struct {
	ins asm.Instructions
	fn  *btf.Func
}

// program is the emitted program with its functions after it. A program
// with functions describes each in BTF, as the kernel wants for a
// bpf_loop callback (func_info).
func (e *emitter) program() asm.Instructions {
	if len(e.subprogs) == 0 {
		return e.ins
	}
	long := &btf.Int{Name: "long", Size: 8, Encoding: btf.Signed}
	voidp := &btf.Pointer{Target: &btf.Void{}}
	out := append(asm.Instructions(nil), e.ins...)
	out[0] = btf.WithFuncMetadata(out[0], &btf.Func{Name: "ktrace_prog", Linkage: btf.GlobalFunc,
		Type: &btf.FuncProto{Return: long, Params: []btf.FuncParam{{Name: "ctx", Type: voidp}}}})
	u32 := &btf.Int{Name: "unsigned int", Size: 4}
	for i, sp := range e.subprogs {
		f := append(asm.Instructions(nil), sp.ins...)
		fn := sp.fn
		if fn == nil {
			fn = &btf.Func{Name: fmt.Sprintf("ktrace_cb%d", i), Linkage: btf.StaticFunc,
				Type: &btf.FuncProto{Return: long, Params: []btf.FuncParam{{Name: "index", Type: u32}, {Name: "ctx", Type: voidp}}}}
		}
		f[0] = btf.WithFuncMetadata(f[0], fn)
		out = append(out, f...)
	}
	return out
}

// ctxFunc describes a function of one pointer argument, "long
// name(void *ctx)": an inline event probe's body.
func ctxFunc(name string) *btf.Func {
	return &btf.Func{Name: name, Linkage: btf.StaticFunc,
		Type: &btf.FuncProto{Return: &btf.Int{Name: "long", Size: 8, Encoding: btf.Signed},
			Params: []btf.FuncParam{{Name: "ctx", Type: &btf.Pointer{Target: &btf.Void{}}}}}}
}

// fieldPos is where a field the format places at off is in the record
// being read. An event probe's own record has the attached record's
// address after the common fields (header), which its format does not
// show: its arguments sit 8 bytes further than the format says.
func (e *emitter) fieldPos(off int) int {
	if e.ownFields && e.p.EventRecord && off >= 8 {
		return off + 8
	}
	return off
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
	return fmt.Sprintf("%sL%d", e.prefix, e.nlabels)
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

// switchValue reads the u32 of a one-entry array map (a switch) into R1,
// jumping to none when the map has no value; R0 is the value's address.
func (e *emitter) switchValue(m asm.FDer, none string) error {
	e.emit(asm.StoreImm(asm.R10, stkKey, 0, asm.Word))
	if err := e.lookup(m, stkKey); err != nil {
		return err
	}
	e.emit(
		asm.JEq.Imm(asm.R0, 0, none),
		asm.LoadMem(asm.R1, asm.R0, 0, asm.Word),
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
func recOff(off int) int16 { return int16(fetchargs.HeaderSize + off) }

// zeroDWord stores a 64-bit zero (BPF_ST|BPF_DW, which asm.StoreImm does
// not build).
func zeroDWord(dst asm.Register, off int16) asm.Instruction {
	return asm.Instruction{OpCode: asm.StoreImmOp(asm.DWord), Dst: dst, Offset: off}
}
