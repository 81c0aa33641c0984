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
		// A star matches nothing as well: the position after it.
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
