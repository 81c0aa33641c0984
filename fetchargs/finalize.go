package fetchargs

import (
	"syscall"

	"github.com/ktrace-dev/ktrace/grammar"
)

// finalize is finalize_fetch_insn: turns the loaded value into a store
// (string, memory or raw), then adds the bitfield and array steps and END.
func (p *parser) finalize(pc *int, a *Arg, bf *grammar.Bitfield, hasType bool, typeOffset int) syscall.Errno {
	ins := &p.prog.ins
	code := *pc
	tOff := p.offset + typeOffset
	if p.offset == garbageOffset {
		tOff = garbageOffset
	}
	tooMany := syscall.EINVAL
	if p.r.e2bigOverflow {
		tooMany = syscall.E2BIG
	}

	if a.Type.IsString {
		op := ins[code].Code
		symstr := a.Type.Name == "symstr"
		if symstr {
			switch op {
			case OpReg, OpStack, OpRetval, OpArg, OpDeref, OpTPArg:
			default:
				p.log(tOff, grammar.ErrBadSymstring)
				return syscall.EINVAL
			}
		} else {
			switch op {
			case OpDeref, OpUDeref, OpImm, OpComm, OpData, OpTPArg:
			default:
				p.log(tOff, grammar.ErrBadString)
				return syscall.EINVAL
			}
		}
		if symstr || op == OpImm || op == OpComm || op == OpData || op == OpTPArg || a.Count > 0 {
			// The value is the address itself (or an array of string
			// pointers): keep it and store through a new instruction.
			code++
			if ins[code].Code != OpNop {
				p.log(p.offset, grammar.ErrTooManyOps)
				return syscall.EINVAL
			}
		}
		switch {
		case a.Type.Name == "ustring" || ins[code].Code == OpUDeref:
			ins[code].Code = OpStUString
		case symstr:
			ins[code].Code = OpStSymstr
		default:
			ins[code].Code = OpStString
		}
		ins[code].Size = a.Type.Size
	} else if ins[code].Code == OpDeref {
		ins[code].Code = OpStMem
		ins[code].Size = a.Type.Size
	} else if ins[code].Code == OpUDeref {
		ins[code].Code = OpStUMem
		ins[code].Size = a.Type.Size
	} else {
		code++
		if ins[code].Code != OpNop {
			p.log(p.offset, grammar.ErrTooManyOps)
			return tooMany
		}
		ins[code] = Op{Code: OpStRaw, Size: a.Type.Size}
	}
	scode := code

	if hasType {
		if bf != nil && !p.parseBitfield(bf, a.Type, &code) {
			p.log(tOff, grammar.ErrBadBitfield)
			return syscall.EINVAL
		}
	} else if p.r.btfArgs && p.lastType != nil {
		if p.lastBitsize%8 != 0 || p.lastBitoffs != 0 {
			code++
			if ins[code].Code != OpNop {
				p.log(p.offset, grammar.ErrTooManyOps)
				return syscall.EINVAL
			}
			ins[code] = Op{
				Code:     OpModBF,
				LShift:   uint8(64 - (p.lastBitsize + p.lastBitoffs)),
				RShift:   uint8(64 - p.lastBitsize),
				BaseSize: 8,
			}
		}
	}

	if a.Count > 0 {
		switch ins[scode].Code {
		case OpStMem, OpStString, OpStUString:
		default:
			p.log(tOff, grammar.ErrBadString)
			return syscall.EINVAL
		}
		code++
		if ins[code].Code != OpNop {
			p.log(p.offset, grammar.ErrTooManyOps)
			return tooMany
		}
		ins[code] = Op{Code: OpLpArray, Param: uint32(a.Count)}
	}
	code++
	ins[code] = Op{Code: OpEnd}
	*pc = code
	return 0
}

// parseBitfield is __parse_bitfield_probe_arg for a "b<W>@<O>/<C>" type:
// appends the MOD_BF step. It reports false for a malformed bitfield (the
// width and offset are simple_strtoul numbers that must fill their parts),
// one wider than its container, or no room left in the program.
func (p *parser) parseBitfield(bf *grammar.Bitfield, typ *Type, pc *int) bool {
	bw, tail := simpleStrtoul(bf.Width.Value, 0)
	if bw == 0 || tail != "" || bf.At.Value == "" {
		return false
	}
	bo, tail := simpleStrtoul(bf.Offs.Value, 0)
	if bf.Offs.Value == "" || tail != "" || bf.Slash.Value == "" {
		return false
	}
	code := *pc + 1
	if p.prog.ins[code].Code != OpNop {
		return false
	}
	*pc = code
	bits := uint64(typ.Size) * 8
	p.prog.ins[code] = Op{
		Code:     OpModBF,
		LShift:   uint8(bits - (bw + bo)),
		RShift:   uint8(bits - bw),
		BaseSize: uint8(typ.Size),
	}
	return bits >= bw+bo
}
