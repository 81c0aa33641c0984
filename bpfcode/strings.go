package bpfcode

import (
	"fmt"

	"github.com/cilium/ebpf/asm"

	"github.com/ktrace-dev/ktrace/fetchargs"
)

// stringArg compiles a string, ustring or symstr argument (or an array of
// strings): each string goes to its own slot of the dynamic area and the
// field gets its __data_loc word.
func (e *emitter) stringArg(i int, a *fetchargs.Arg, first fetchargs.Op, derefs []fetchargs.Op, st fetchargs.Op, count int) error {
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
	case fetchargs.OpComm:
		if len(derefs) > 0 || count > 0 {
			return fmt.Errorf("$comm cannot be dereferenced")
		}
		so := recOff(l.SlotOffset(slot0))
		// The string and its length: copied from the header's comm,
		// or read into place and measured there.
		e.emit(asm.Mov.Reg(asm.R3, rBuf))
		if e.headerComm {
			e.emit(asm.Add.Imm(asm.R3, 16))
		} else {
			e.emit(
				asm.Add.Imm(asm.R3, int32(so)),
				asm.Mov.Reg(asm.R1, asm.R3),
				asm.Mov.Imm(asm.R2, 16),
				asm.FnGetCurrentComm.Call(),
				asm.Mov.Reg(asm.R3, rBuf),
				asm.Add.Imm(asm.R3, int32(so)),
			)
		}
		e.emit(
			asm.Mov.Reg(asm.R1, rBuf),
			asm.Add.Imm(asm.R1, int32(so)),
			asm.Mov.Imm(asm.R2, 16),
			asm.FnProbeReadKernelStr.Call(),
		)
		e.dataLoc(fieldOff, l.SlotOffset(slot0))
		return nil
	case fetchargs.OpData:
		if e.p.User {
			// A uprobe reads it as user memory at the kernel's copy
			// of it: a fault (the word stored above; checked in the
			// VM on 6.1 and 6.12).
			return nil
		}
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
	var lastDeref *fetchargs.Op
	if count > 0 && len(derefs) > 0 {
		lastDeref = &derefs[len(derefs)-1]
		last = derefs[:len(derefs)-1]
	}
	for _, d := range last {
		e.readWord(d.Offset, d.Code == fetchargs.OpUDeref, fault)
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
				e.readWord(lastDeref.Offset, lastDeref.Code == fetchargs.OpUDeref, fault)
			}
		}
		if st.Code == fetchargs.OpStSymstr {
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
		e.readCall(st.Code == fetchargs.OpStUString, true)
		if e.p.User {
			e.userStringBound(st.Offset)
		}
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
	if e.userDataBound() {
		e.emit(
			asm.LoadMem(asm.R1, asm.R10, stkDyn, asm.DWord),
			asm.Add.Reg(asm.R1, asm.R0),
			asm.StoreMem(asm.R10, stkDyn, asm.R1, asm.DWord),
		)
	}
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

// maxStringSize is the kernel's MAX_STRING_SIZE.
const maxStringSize = 4096

// userStringBound applies the uprobe rule for strings to a read's result
// in R0: the kernel first measures the string with strnlen_user() over
// MAX_STRING_SIZE bytes and records a fault when no NUL is among them. A
// read that filled a MAX_STRING_SIZE slot found none in its first 4095
// bytes; the string is then a fault unless the 4096th byte is the NUL.
// rVal + off is the string's address. (A smaller slot cuts the string at
// its size, as for every probe with that many strings.)
func (e *emitter) userStringBound(off int64) {
	if e.p.Layout.StrSlot != maxStringSize {
		return
	}
	done, fault := e.newLabel(), e.newLabel()
	e.emit(
		asm.JNE.Imm(asm.R0, maxStringSize, done),
		zeroDWord(asm.R10, stkTmp),
		asm.Mov.Reg(asm.R1, asm.R10),
		asm.Add.Imm(asm.R1, stkTmp),
		asm.Mov.Imm(asm.R2, 1),
		asm.Mov.Reg(asm.R3, rVal),
	)
	e.addImm64(asm.R3, off+maxStringSize-1)
	e.emit(
		asm.FnProbeReadUser.Call(),
		asm.JNE.Imm(asm.R0, 0, fault),
		asm.LoadMem(asm.R1, asm.R10, stkTmp, asm.Byte),
		asm.Mov.Imm(asm.R0, maxStringSize),
		asm.JEq.Imm(asm.R1, 0, done),
	)
	e.mark(fault)
	e.emit(asm.Mov.Imm(asm.R0, 0))
	e.mark(done)
}
