package bpfcode

import (
	"fmt"

	"github.com/cilium/ebpf/asm"

	"github.com/ktrace-dev/ktrace/fetchargs"
)

// entryDataOff is the scratch offset of the entry-data copy.
func (e *emitter) entryDataOff() int { return fetchargs.HeaderSize + e.p.Layout.RecordSize() }

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

// loadIP loads regs->ip into rVal: the probed address at a uprobe's hit,
// the return address in a return probe.
func (e *emitter) loadIP() error {
	off, ok := e.p.Arch.Regs[ipReg(e.p.Arch)]
	if !ok {
		return fmt.Errorf("fetchargs: compile: %s has no instruction pointer register", e.p.Arch.Name)
	}
	e.emit(asm.LoadMem(rVal, rCtx, int16(off), asm.DWord))
	return nil
}

// entryIP loads the probed address a uretprobe's entry program saved into
// rVal (0 when the entry was missed).
func (e *emitter) entryIP() error {
	for i, n := range e.p.Layout.EntrySlots {
		if n == fetchargs.EntryIPSlot {
			e.emit(asm.LoadMem(rVal, rBuf, int16(e.entryDataOff()+8*i), asm.DWord))
			return nil
		}
	}
	return fmt.Errorf("fetchargs: compile: a uretprobe without its entry address slot")
}

// CompileEntry returns the entry program of a return probe that uses
// entry data ($argN or BTF arguments on a kretprobe or fprobe exit): it
// pushes the function's arguments for the return program, keyed by thread
// and call depth. It returns nil when the probe needs none.
func CompileEntry(p *ProbeProgram, m *Maps) (asm.Instructions, error) {
	if p == nil || p.Layout == nil || m == nil || p.Arch == nil {
		return nil, fmt.Errorf("fetchargs: compile entry: incomplete probe")
	}
	if p.Source != nil {
		// An event probe on an fexit: the source's entry data.
		p = p.Source
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
	if err := e.scratchBuf(); err != nil {
		return nil, err
	}
	out := e.newLabel()
	// The slots, built at the start of the scratch value.
	for i := 0; i*8 < p.EntryDataSize; i++ {
		if i < len(slots) {
			if slots[i] == fetchargs.EntryIPSlot {
				if err := e.loadIP(); err != nil {
					return nil, err
				}
			} else if err := e.loadArg(slots[i]); err != nil {
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
