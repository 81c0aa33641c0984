package bpfcode

import (
	"fmt"

	"github.com/cilium/ebpf/asm"
)

// Glob patterns of string predicates (the kernel's glob_match, for "~"
// patterns with a wildcard inside, '?', a character class or an escape),
// on strings of a fixed length (comm, char arrays): the pattern, a
// constant, becomes a set of positions, and the program follows which of
// them the string read so far can be at (bit j: the first j elements
// matched), one byte at a time, unrolled. That is what glob_match's
// single backtracking point computes.

// globElem is one element of a glob pattern.
type globElem struct {
	star bool
	// ranges are the bytes the element matches (none of them NUL).
	ranges [][2]byte
}

// maxGlobElems bounds a pattern's elements (one bit each, and the end).
const maxGlobElems = 63

// maxGlobWork bounds the unrolled matcher: string bytes times elements.
const maxGlobWork = 2048

// globElems reads pat as glob_match does: '?' any byte, '*' any run,
// '[...]' a class ('!' inverts, "a-b" ranges, a first ']' is literal; a
// class without its ']' is a literal '['), '\' escapes the next byte (a
// trailing one ends the pattern, as the NUL it reads does).
func globElems(pat string) []globElem {
	var out []globElem
	lit := func(c byte) globElem { return globElem{ranges: [][2]byte{{c, c}}} }
	at := func(i int) byte {
		if i < len(pat) {
			return pat[i]
		}
		return 0
	}
	for i := 0; i < len(pat); {
		d := pat[i]
		i++
		switch d {
		case '?':
			out = append(out, globElem{ranges: [][2]byte{{1, 255}}})
		case '*':
			out = append(out, globElem{star: true})
		case '[':
			inverted := at(i) == '!'
			class := i
			if inverted {
				class++
			}
			var spans [][2]byte
			a := at(class)
			class++
			ok := true
			for {
				b := a
				if a == 0 {
					ok = false
					break
				}
				if at(class) == '-' && at(class+1) != ']' {
					b = at(class + 1)
					if b == 0 {
						ok = false
						break
					}
					class += 2
				}
				spans = append(spans, [2]byte{a, b})
				a = at(class)
				class++
				if a == ']' {
					break
				}
			}
			if !ok {
				out = append(out, lit('['))
				continue
			}
			var in [256]bool
			for _, s := range spans {
				for c := int(s[0]); c <= int(s[1]); c++ {
					in[c] = true
				}
			}
			if inverted {
				for c := range in {
					in[c] = !in[c]
				}
			}
			in[0] = false
			out = append(out, globElem{ranges: byteRanges(in)})
			i = class
		case '\\':
			if i >= len(pat) {
				return out
			}
			out = append(out, lit(pat[i]))
			i++
		default:
			out = append(out, lit(d))
		}
	}
	return out
}

// byteRanges are the runs of bytes in.
func byteRanges(in [256]bool) [][2]byte {
	var out [][2]byte
	for c := 0; c < 256; c++ {
		if !in[c] {
			continue
		}
		start := c
		for c+1 < 256 && in[c+1] {
			c++
		}
		out = append(out, [2]byte{byte(start), byte(c)})
	}
	return out
}

// checkGlob reports whether a pattern on a string of n bytes can be
// matched.
func checkGlob(pat string, n int) error {
	el := globElems(pat)
	if len(el) > maxGlobElems {
		return fmt.Errorf("glob pattern of %d elements: %w", len(el), ErrUnsupported)
	}
	if n*(len(el)+1) > maxGlobWork {
		return fmt.Errorf("glob pattern of %d elements on %d bytes: %w", len(el), n, ErrUnsupported)
	}
	return nil
}

// globFixed emits the match of the n-byte string at rStr with pattern
// pat: a jump to yes or no. R4 holds the positions, R3 the next ones.
func (e *emitter) globFixed(pat string, n int, yes, no string) error {
	if err := checkGlob(pat, n); err != nil {
		return err
	}
	el := globElems(pat)
	closure := func(m uint64) uint64 {
		for j, x := range el {
			if x.star && m&(1<<j) != 0 {
				m |= 1 << (j + 1)
			}
		}
		return m
	}
	end := e.newLabel()
	e.emit(asm.LoadImm(asm.R4, int64(closure(1)), asm.DWord))
	for i := 0; i < n; i++ {
		e.emit(
			asm.LoadMem(asm.R1, rStr, int16(i), asm.Byte),
			asm.JEq.Imm(asm.R1, 0, end),
			asm.Mov.Imm(asm.R3, 0),
		)
		e.globPositions(el)
		e.emit(
			asm.Mov.Reg(asm.R4, asm.R3),
			asm.JEq.Imm(asm.R4, 0, no),
		)
	}
	e.mark(end)
	e.emit(
		asm.RSh.Imm(asm.R4, int32(len(el))),
		asm.And.Imm(asm.R4, 1),
		asm.JNE.Imm(asm.R4, 0, yes),
		asm.Ja.Label(no),
	)
	return nil
}

// orBit sets bit b of r.
func (e *emitter) orBit(r asm.Register, b int) {
	if b < 31 {
		e.emit(asm.Or.Imm(r, int32(1)<<b))
		return
	}
	e.emit(asm.LoadImm(asm.R5, int64(1)<<b, asm.DWord), asm.Or.Reg(r, asm.R5))
}

// Patterns on strings of run-time length (__data_loc fields, probe and
// pointer strings) are followed the same way, one byte per iteration of
// bpf_loop (Linux 5.17): its callback, a function of the program, keeps
// the positions in a context on the caller's stack. A glob pattern stops
// at the string's NUL, as glob_match does; an infix pattern ("*abc*")
// reads the length argument's bytes, NULs included, as strnstr does.

// The loop's context on the stack: the positions, the string's address,
// its length, and whether an infix pattern was found.
const (
	stkGlobMask = -200
	stkGlobStr  = -192
	stkGlobLen  = -184
	stkGlobRes  = -176
)

// infixElems are the positions of strnstr(s, pat): any run, then pat.
func infixElems(pat string) []globElem {
	el := []globElem{{star: true}}
	for i := 0; i < len(pat); i++ {
		el = append(el, globElem{ranges: [][2]byte{{pat[i], pat[i]}}})
	}
	return el
}

// checkGlobLoop reports whether a pattern can be followed in a loop.
func checkGlobLoop(el []globElem) error {
	if len(el) > maxGlobElems {
		return fmt.Errorf("pattern of %d elements: %w", len(el), ErrUnsupported)
	}
	return nil
}

// globLoop emits the match of the string at rStr, of length rLen (at
// most maxLen bytes are read), with elements el: a jump to yes or no.
func (e *emitter) globLoop(el []globElem, infix bool, maxLen int, yes, no string) error {
	if err := checkGlobLoop(el); err != nil {
		return err
	}
	init := uint64(1)
	for j, x := range el {
		if x.star && init&(1<<j) != 0 {
			init |= 1 << (j + 1)
		}
	}
	cb := e.newLabel() + "_glob"
	// The first positions go through the scratch value, which the
	// verifier cannot see into: a verifier that checks the callback once,
	// with the constant it would otherwise know (6.1.192), would take
	// the branches of other positions for dead code and drop them
	// (measured: no pattern ever matched there).
	tmp := int16(FilterScratch(e.filterRec) - 8)
	e.emit(
		asm.LoadImm(asm.R1, int64(init), asm.DWord),
		asm.StoreMem(rBuf, tmp, asm.R1, asm.DWord),
		asm.LoadMem(asm.R1, rBuf, tmp, asm.DWord),
		asm.StoreMem(asm.R10, stkGlobMask, asm.R1, asm.DWord),
		asm.StoreMem(asm.R10, stkGlobStr, rStr, asm.DWord),
		asm.StoreMem(asm.R10, stkGlobLen, rLen, asm.DWord),
		asm.Mov.Imm(asm.R1, 0),
		asm.StoreMem(asm.R10, stkGlobRes, asm.R1, asm.DWord),
		asm.Mov.Reg(asm.R1, rLen),
	)
	bounded := e.newLabel()
	e.emit(
		asm.JLE.Imm(asm.R1, int32(maxLen), bounded),
		asm.Mov.Imm(asm.R1, int32(maxLen)),
	)
	e.mark(bounded)
	e.emit(
		asm.Mov.Imm(asm.R4, 0),
		asm.Instruction{OpCode: asm.LoadImmOp(asm.DWord), Dst: asm.R2, Src: asm.PseudoFunc, Constant: -1}.WithReference(cb),
		asm.Mov.Reg(asm.R3, asm.R10),
		asm.Add.Imm(asm.R3, stkGlobMask),
		asm.FnLoop.Call(),
		asm.LoadMem(asm.R1, asm.R10, stkGlobRes, asm.DWord),
		asm.JNE.Imm(asm.R1, 0, yes),
	)
	if infix {
		e.emit(asm.Ja.Label(no))
	} else {
		e.emit(
			asm.LoadMem(asm.R4, asm.R10, stkGlobMask, asm.DWord),
			asm.RSh.Imm(asm.R4, int32(len(el))),
			asm.And.Imm(asm.R4, 1),
			asm.JNE.Imm(asm.R4, 0, yes),
			asm.Ja.Label(no),
		)
	}
	return e.subprog(func() { e.globStep(cb, el, infix, maxLen) })
}

// subprog emits a function of the program, appended after its end.
func (e *emitter) subprog(body func()) error {
	if e.label != "" {
		return fmt.Errorf("fetchargs: compile: a label pending before a function")
	}
	main := e.ins
	e.ins = nil
	body()
	if e.label != "" {
		return fmt.Errorf("fetchargs: compile: a label pending at a function's end")
	}
	e.subprogs = append(e.subprogs, subprog{ins: e.ins})
	e.ins = main
	return nil
}

// globStep is the loop's callback: R1 the byte's index, R2 the context.
// It returns 1 to stop the loop.
func (e *emitter) globStep(name string, el []globElem, infix bool, maxLen int) {
	stop := e.newLabel()
	e.mark(name)
	// R0 holds the context until the return (the callee-saved
	// registers stay untouched: the kernel may inline the loop in the
	// caller with them).
	e.emit(
		asm.Mov.Reg(asm.R0, asm.R2),
		asm.LoadMem(asm.R2, asm.R0, stkGlobLen-stkGlobMask, asm.DWord),
		asm.JGE.Reg(asm.R1, asm.R2, stop),
		asm.JGE.Imm(asm.R1, int32(maxLen), stop),
		asm.LoadMem(asm.R3, asm.R0, stkGlobStr-stkGlobMask, asm.DWord),
		asm.Add.Reg(asm.R3, asm.R1),
		asm.LoadMem(asm.R1, asm.R3, 0, asm.Byte),
	)
	if !infix {
		e.emit(asm.JEq.Imm(asm.R1, 0, stop))
	}
	e.emit(
		asm.LoadMem(asm.R4, asm.R0, 0, asm.DWord),
		asm.Mov.Imm(asm.R3, 0),
	)
	e.globPositions(el)
	if infix {
		found := e.newLabel()
		e.emit(
			asm.Mov.Reg(asm.R2, asm.R3),
			asm.RSh.Imm(asm.R2, int32(len(el))),
			asm.And.Imm(asm.R2, 1),
			asm.JEq.Imm(asm.R2, 0, found),
			asm.Mov.Imm(asm.R2, 1),
			asm.StoreMem(asm.R0, stkGlobRes-stkGlobMask, asm.R2, asm.DWord),
			asm.Ja.Label(stop),
		)
		e.mark(found)
	}
	e.emit(
		asm.StoreMem(asm.R0, 0, asm.R3, asm.DWord),
		asm.JEq.Imm(asm.R3, 0, stop),
		asm.Mov.Imm(asm.R0, 0),
		asm.Return(),
	)
	e.mark(stop)
	e.emit(asm.Mov.Imm(asm.R0, 1), asm.Return())
}

// globPositions computes in R3 the positions after byte R1 from those in
// R4 (R2 and R5 are scratch).
func (e *emitter) globPositions(el []globElem) {
	for j, x := range el {
		skip := e.newLabel()
		e.emit(
			asm.Mov.Reg(asm.R2, asm.R4),
			asm.RSh.Imm(asm.R2, int32(j)),
			asm.And.Imm(asm.R2, 1),
			asm.JEq.Imm(asm.R2, 0, skip),
		)
		if x.star {
			e.orBit(asm.R3, j)
		} else {
			set := e.newLabel()
			for _, r := range x.ranges {
				next := e.newLabel()
				if r[0] == r[1] {
					e.emit(asm.JEq.Imm(asm.R1, int32(r[0]), set))
					continue
				}
				e.emit(
					asm.JLT.Imm(asm.R1, int32(r[0]), next),
					asm.JLE.Imm(asm.R1, int32(r[1]), set),
				)
				e.mark(next)
			}
			e.emit(asm.Ja.Label(skip))
			e.mark(set)
			e.orBit(asm.R3, j+1)
		}
		e.mark(skip)
	}
	for j, x := range el {
		if !x.star {
			continue
		}
		skip := e.newLabel()
		e.emit(
			asm.Mov.Reg(asm.R2, asm.R3),
			asm.RSh.Imm(asm.R2, int32(j)),
			asm.And.Imm(asm.R2, 1),
			asm.JEq.Imm(asm.R2, 0, skip),
		)
		e.orBit(asm.R3, j+1)
		e.mark(skip)
	}
}
