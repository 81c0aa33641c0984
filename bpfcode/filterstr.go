package bpfcode

import (
	"fmt"

	"github.com/cilium/ebpf/asm"

	"github.com/ktrace-dev/ktrace/fetchargs"
	"github.com/ktrace-dev/ktrace/filter"
)

// String predicates of the filter stage, compared in place with the
// pattern as constants, following the kernel's regex_match_* functions:
// the kernel's length argument is a constant (comm, a static char array)
// or the run-time length in rLen (a __data_loc string's recorded length,
// a pointer string's strlen+1).

// strSource describes where a string predicate's bytes are.
type strSource struct {
	constLen int  // the length argument when fixed, else -1 (in rLen)
	dynamic  bool // rLen holds the length and rLoc the string's record offset
	// maxEnd bounds rLoc + rLen, for the verifier: the record's end, or
	// the end of a copied pointer string.
	maxEnd int
	// maxLen bounds the bytes a loop reads from rStr, for the verifier.
	maxLen int
}

// rLoc holds a dynamic string's offset in the record (R5 survives the
// comparisons, which use R1 to R4).
const rLoc = asm.R5

func (e *emitter) stringPred(p *filter.Pred) error {
	r := p.Regex
	fl := p.Field
	size := e.filterRec
	no := e.newLabel()
	var src strSource
	switch p.Kind {
	case filter.KindComm:
		// The header holds current->comm at offset 16.
		e.emit(asm.Mov.Reg(rStr, rBuf), asm.Add.Imm(rStr, 16))
		src = strSource{constLen: 16}
	case filter.KindString:
		e.emit(asm.Mov.Reg(rStr, rBuf), asm.Add.Imm(rStr, int32(recOff(e.fieldPos(fl.Offset)))))
		src = strSource{constLen: fl.Size}
		if fl.Size == 0 {
			// A char array without a size (ftrace/print's buf) is a
			// string ended by its NUL, which the kernel compares with
			// the length argument 0: here, as a string running to the
			// record's end, which is zero after its NUL.
			at := e.fieldPos(fl.Offset)
			if at >= size {
				return fmt.Errorf("string %s outside the record: %w", fl.Name, ErrUnsupported)
			}
			e.emit(asm.Mov.Imm(rLoc, int32(at)), asm.Mov.Imm(rLen, int32(size-at)))
			src = strSource{constLen: -1, maxEnd: size, dynamic: true, maxLen: size - at}
		}
	case filter.KindStrLoc, filter.KindStrRelLoc:
		e.emit(
			asm.LoadMem(asm.R1, rBuf, recOff(e.fieldPos(fl.Offset)), asm.Word),
			asm.Mov.Reg(rLen, asm.R1),
			asm.RSh.Imm(rLen, 16),
			asm.And.Imm(asm.R1, 0xffff),
		)
		if p.Kind == filter.KindStrRelLoc {
			e.emit(asm.Add.Imm(asm.R1, int32(e.fieldPos(fl.Offset)+4)))
		}
		e.emit(
			asm.JGT.Imm(asm.R1, int32(size), no),
			asm.JGT.Imm(rLen, int32(size), no),
			asm.Mov.Reg(rLoc, asm.R1),
			asm.Mov.Reg(rStr, rBuf),
			asm.Add.Imm(rStr, fetchargs.HeaderSize),
			asm.Add.Reg(rStr, asm.R1),
		)
		src = strSource{constLen: -1, maxEnd: size, dynamic: true, maxLen: size}
	case filter.KindPChar, filter.KindPCharUser:
		// Copy the string past the record, at most the kernel's 1024
		// bytes; an empty string (or a failed read) never matches.
		off := int32(fetchargs.HeaderSize + size)
		fn := asm.FnProbeReadKernelStr
		if p.Kind == filter.KindPCharUser {
			fn = asm.FnProbeReadUserStr
		}
		e.emit(
			asm.Mov.Reg(asm.R1, rBuf),
			asm.Add.Imm(asm.R1, off),
			asm.Mov.Imm(asm.R2, pcharMax),
			asm.LoadMem(asm.R3, rBuf, recOff(e.fieldPos(fl.Offset)), asm.DWord),
			fn.Call(),
			asm.JSLE.Imm(asm.R0, 1, no),
			asm.Mov.Reg(rLen, asm.R0),
			asm.Mov.Imm(rLoc, int32(size)),
			asm.Mov.Reg(rStr, rBuf),
			asm.Add.Imm(rStr, off),
		)
		src = strSource{constLen: -1, maxEnd: size + pcharMax, dynamic: true, maxLen: pcharMax}
	default:
		return fmt.Errorf("string kind %d: %w", p.Kind, ErrUnsupported)
	}
	yes := e.newLabel()
	// Both results stay reachable for the verifier's check of the
	// program's graph, whatever the pattern (an empty one never jumps to
	// no): rStr, an address, is never 0.
	e.emit(asm.JEq.Imm(rStr, 0, no), asm.JEq.Imm(rStr, 0, yes))
	if err := e.match(r, src, yes, no); err != nil {
		return err
	}
	done := e.newLabel()
	res := func(l string, v int32) {
		e.mark(l)
		if p.Not {
			v = 1 - v
		}
		e.emit(asm.Mov.Imm(asm.R0, v), asm.Ja.Label(done))
	}
	res(yes, 1)
	res(no, 0)
	e.mark(done)
	return nil
}

// cmpBytes jumps to no unless the bytes at rStr+at+i equal pat (base is
// the register holding the start, at a constant offset).
func (e *emitter) cmpBytes(base asm.Register, at int, pat []byte, no string) {
	for i, c := range pat {
		e.emit(
			asm.LoadMem(asm.R1, base, int16(at+i), asm.Byte),
			asm.JNE.Imm(asm.R1, int32(c), no),
		)
	}
}

// match emits the comparison of the string at rStr with r: a jump to yes
// or no.
func (e *emitter) match(r *filter.Regex, src strSource, yes, no string) error {
	pat := []byte(r.Pattern)
	P := len(pat)
	switch r.Type {
	case filter.MatchGlob:
		if src.dynamic {
			return e.globLoop(globElems(r.Pattern), false, src.maxLen, yes, no)
		}
		return e.globFixed(r.Pattern, src.constLen, yes, no)
	case filter.MatchFull:
		full := append(pat, 0)
		if !src.dynamic {
			// strncmp over min(n, P+1) bytes.
			n := min(src.constLen, P+1)
			e.cmpBytes(rStr, 0, full[:n], no)
			e.emit(asm.Ja.Label(yes))
			return nil
		}
		// n == 0 would compare NUL-terminated strings; a recorded string
		// has its NUL, so compare P+1 bytes then.
		all := e.newLabel()
		e.emit(asm.JEq.Imm(rLen, 0, all))
		for i, c := range full {
			e.emit(
				asm.JLE.Imm(rLen, int32(i), yes),
				asm.LoadMem(asm.R1, rStr, int16(i), asm.Byte),
				asm.JNE.Imm(asm.R1, int32(c), no),
			)
		}
		e.emit(asm.Ja.Label(yes))
		e.mark(all)
		e.cmpBytes(rStr, 0, full, no)
		e.emit(asm.Ja.Label(yes))
	case filter.MatchFront:
		if !src.dynamic {
			if src.constLen != 0 && src.constLen < P {
				e.emit(asm.Ja.Label(no))
				return nil
			}
		} else {
			ok := e.newLabel()
			e.emit(asm.JEq.Imm(rLen, 0, ok), asm.JLT.Imm(rLen, int32(P), no))
			e.mark(ok)
		}
		e.cmpBytes(rStr, 0, pat, no)
		e.emit(asm.Ja.Label(yes))
	case filter.MatchEnd:
		// The P bytes before the last byte of the length argument.
		if !src.dynamic {
			at := src.constLen - 1 - P
			if at < 0 {
				e.emit(asm.Ja.Label(no))
				return nil
			}
			e.cmpBytes(rStr, at, pat, no)
			e.emit(asm.Ja.Label(yes))
			return nil
		}
		// R2 = the record offset of those bytes, bounded for the verifier.
		e.emit(
			asm.Mov.Reg(asm.R2, rLen),
			asm.Add.Imm(asm.R2, int32(-1-P)),
			asm.JSLT.Imm(asm.R2, 0, no),
			asm.Add.Reg(asm.R2, rLoc),
			asm.JGT.Imm(asm.R2, int32(src.maxEnd), no),
			asm.Mov.Reg(asm.R3, rBuf),
			asm.Add.Imm(asm.R3, fetchargs.HeaderSize),
			asm.Add.Reg(asm.R3, asm.R2),
		)
		e.cmpBytes(asm.R3, 0, pat, no)
		e.emit(asm.Ja.Label(yes))
	case filter.MatchMiddle:
		// strnstr: the pattern at each offset while n-offset >= P; NULs
		// in the string do not stop it.
		if P == 0 {
			e.emit(asm.Ja.Label(yes))
			return nil
		}
		if !src.dynamic {
			// A fixed length: every offset, unrolled.
			for off := 0; off+P <= src.constLen; off++ {
				next := e.newLabel()
				e.cmpBytes(rStr, off, pat, next)
				e.emit(asm.Ja.Label(yes))
				e.mark(next)
			}
			e.emit(asm.Ja.Label(no))
			return nil
		}
		// A run-time length: the positions of "*pat" followed over
		// the length argument's bytes in a bpf_loop.
		return e.globLoop(infixElems(r.Pattern), true, src.maxLen, yes, no)
	default:
		return fmt.Errorf("match type %d: %w", r.Type, ErrUnsupported)
	}
	return nil
}
