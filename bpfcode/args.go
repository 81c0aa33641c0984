package bpfcode

import (
	"fmt"

	"github.com/cilium/ebpf/asm"

	"github.com/ktrace-dev/ktrace/fetchargs"
	"github.com/ktrace-dev/ktrace/filter"
)

// readCall emits a bpf_probe_read_{kernel,user}[_str] call with R1 (dst),
// R2 (size) and R3 (src) already set. A kernel read of a user address
// reads user memory on x86_64 (probe_mem_read's TASK_SIZE fallback).
func (e *emitter) readCall(user, str bool) {
	user = user || e.p.User
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
func (e *emitter) load(op fetchargs.Op) error {
	a := e.p.Arch
	if e.p.RawTracepoint {
		switch op.Code {
		case fetchargs.OpReg, fetchargs.OpStack, fetchargs.OpStackP, fetchargs.OpRetval, fetchargs.OpEData:
			return fmt.Errorf("%s on a tracepoint: %w", op.Code, ErrUnsupported)
		}
	}
	switch op.Code {
	case fetchargs.OpReg:
		if op.Param%8 != 0 || op.Param > 1<<12 {
			return fmt.Errorf("register offset %d", op.Param)
		}
		e.emit(asm.LoadMem(rVal, rCtx, int16(op.Param), asm.DWord))
	case fetchargs.OpStack:
		return e.loadStack(int(op.Param))
	case fetchargs.OpStackP:
		off, ok := a.Regs[a.SPReg]
		if !ok {
			return fmt.Errorf("no stack pointer register")
		}
		e.emit(asm.LoadMem(rVal, rCtx, int16(off), asm.DWord))
	case fetchargs.OpRetval:
		off, ok := a.Regs[a.RetReg]
		if !ok {
			return fmt.Errorf("no return register")
		}
		e.emit(asm.LoadMem(rVal, rCtx, int16(off), asm.DWord))
	case fetchargs.OpImm:
		e.emit(asm.LoadImm(rVal, int64(op.Imm), asm.DWord))
	case fetchargs.OpFOffs:
		// translate_user_vaddr(): the file offset in the mapping the
		// probe was hit in.
		if !e.p.User {
			return fmt.Errorf("%s outside a uprobe: %w", op.Code, ErrUnsupported)
		}
		var err error
		if e.p.Return {
			err = e.entryIP()
		} else {
			err = e.loadIP()
		}
		if err != nil {
			return err
		}
		e.addImm64(rVal, int64(op.Imm)-int64(e.p.FileOffset))
	case fetchargs.OpArg:
		return e.loadArg(int(op.Param))
	case fetchargs.OpTPArg:
		return e.loadEventField(op)
	case fetchargs.OpEData:
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
func (e *emitter) arg(i int, a *fetchargs.Arg) error {
	ops := a.Ops
	for len(ops) > 0 && ops[0].Code == fetchargs.OpNopSymbol {
		if len(ops) < 2 || ops[1].Code != fetchargs.OpImm || ops[1].Imm == 0 {
			return fmt.Errorf("unresolved symbol %q", ops[0].Data)
		}
		ops = ops[1:]
	}
	if len(ops) < 3 || ops[len(ops)-1].Code != fetchargs.OpEnd {
		return fmt.Errorf("malformed fetch program %s", fetchargs.ProgramString(a.Ops))
	}
	first := ops[0]
	// Stage 2: dereferences.
	j := 1
	for j < len(ops) && (ops[j].Code == fetchargs.OpDeref || ops[j].Code == fetchargs.OpUDeref) {
		j++
	}
	derefs := ops[1:j]
	if j >= len(ops) {
		return fmt.Errorf("fetch program without a store")
	}
	st := ops[j]
	j++
	var bf *fetchargs.Op
	if ops[j].Code == fetchargs.OpModBF {
		bf = &ops[j]
		j++
	}
	count := 0
	if ops[j].Code == fetchargs.OpLpArray {
		count = int(ops[j].Param)
		j++
	}
	if ops[j].Code != fetchargs.OpEnd {
		return fmt.Errorf("unexpected %s in %s", ops[j], fetchargs.ProgramString(a.Ops))
	}
	if count != a.Count {
		return fmt.Errorf("array count %d, type says %d", count, a.Count)
	}
	fieldOff := e.p.Layout.Offsets[i]
	fault := e.newLabel()
	done := e.newLabel()

	switch st.Code {
	case fetchargs.OpStString, fetchargs.OpStUString, fetchargs.OpStSymstr:
		return e.stringArg(i, a, first, derefs, st, count)
	}

	// Numbers: load, dereference, store.
	if err := e.load(first); err != nil {
		return err
	}
	for _, d := range derefs {
		e.readWord(d.Offset, d.Code == fetchargs.OpUDeref, fault)
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
		case fetchargs.OpStRaw:
			e.emit(asm.StoreMem(rBuf, recOff(dst), rVal, sz))
		case fetchargs.OpStMem, fetchargs.OpStUMem:
			e.emit(
				asm.Mov.Reg(asm.R1, rBuf),
				asm.Add.Imm(asm.R1, int32(recOff(dst))),
				asm.Mov.Imm(asm.R2, int32(st.Size)),
				asm.Mov.Reg(asm.R3, rVal),
			)
			e.addImm64(asm.R3, st.Offset+int64(k*st.Size))
			e.readCall(st.Code == fetchargs.OpStUMem, false)
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
func (e *emitter) bitfield(dst, size int, bf fetchargs.Op) {
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

// loadEventField loads field $FIELD of an event probe's attached record
// into rVal as get_event_field does: the address of a string field's text
// (a __data_loc or __rel_loc string's data, a char array itself), for a
// "char *" field with EventPtrByte the pointer's first byte (6.12 reads
// that, not the pointer: "fn=0x80" for a pointer ending in 0x80), else
// the field's value by its size, sign-extended when the field is signed,
// eight bytes for sizes other than 1, 2 and 4.
func (e *emitter) loadEventField(op fetchargs.Op) error {
	if !e.p.EventRecord || int(op.Param) >= len(e.p.EventFields) {
		return fmt.Errorf("%s outside an event probe: %w", op, ErrUnsupported)
	}
	f := e.p.EventFields[op.Param]
	// The record's address, stored as a number by the header.
	rec := func(r asm.Register) { e.emit(asm.LoadMem(r, rBuf, recOff(8), asm.DWord)) }
	// read loads n bytes at the record's address + off into rVal.
	read := func(off, n int) {
		rec(asm.R3)
		e.emit(
			asm.Add.Imm(asm.R3, int32(off)),
			zeroDWord(asm.R10, stkTmp),
			asm.Mov.Reg(asm.R1, asm.R10),
			asm.Add.Imm(asm.R1, stkTmp),
			asm.Mov.Imm(asm.R2, int32(n)),
			asm.FnProbeReadKernel.Call(),
			asm.LoadMem(rVal, asm.R10, stkTmp, asm.DWord),
		)
	}
	switch filter.ClassOf(f.Type, false) {
	case filter.DynString, filter.RelDynString:
		read(f.Offset, 4)
		e.emit(asm.And.Imm(rVal, 0xffff))
		rec(asm.R1)
		e.emit(asm.Add.Reg(rVal, asm.R1))
		if filter.ClassOf(f.Type, false) == filter.RelDynString {
			e.emit(asm.Add.Imm(rVal, int32(f.Offset)))
		}
		return nil
	case filter.StaticString:
		rec(rVal)
		e.emit(asm.Add.Imm(rVal, int32(f.Offset)))
		return nil
	case filter.PtrString:
		if e.p.EventPtrByte {
			read(f.Offset, 1)
			return nil
		}
	}
	switch f.Size {
	case 1, 2, 4:
		read(f.Offset, f.Size)
		if f.Signed {
			e.signExtend(rVal, f.Size)
		}
	default:
		read(f.Offset, 8)
	}
	return nil
}
