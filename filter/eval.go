package filter

import (
	"encoding/binary"
)

// Context is what evaluation needs besides the record: the state of the
// task and CPU the event fired on, and memory for pointer strings.
type Context struct {
	CPU  int
	Comm [16]byte // current->comm, NUL-padded
	// CPUs is nr_cpu_ids (cpumask comparisons look at that many bits).
	CPUs int
	// ReadString reads the NUL-terminated string at addr from kernel
	// memory (user memory when user is set), at most max bytes with the
	// NUL; ok is false when the read faults.
	ReadString func(addr uint64, user bool, max int) (s []byte, ok bool)
}

// ustringBufSize is the kernel's buffer for pointer strings.
const ustringBufSize = 1024

// Match reports whether the record rec (the event's binary record, common
// header included) passes the filter, as filter_match_preds computes it.
func (f *Filter) Match(rec []byte, ctx *Context) bool {
	i := 0
	for i < len(f.prog) {
		e := &f.prog[i]
		if e.pred.Eval(rec, ctx) == e.when {
			i = e.target + 1
		} else {
			i++
		}
	}
	return i == len(f.prog)
}

// field reads size bytes at off as a little-endian number (0 outside rec).
func field(rec []byte, off, size int) uint64 {
	if off < 0 || off+size > len(rec) {
		return 0
	}
	b := rec[off : off+size]
	switch size {
	case 1:
		return uint64(b[0])
	case 2:
		return uint64(binary.LittleEndian.Uint16(b))
	case 4:
		return uint64(binary.LittleEndian.Uint32(b))
	case 8:
		return binary.LittleEndian.Uint64(b)
	}
	return 0
}

// signExtend widens a size-byte value to int64.
func signExtend(v uint64, size int) int64 {
	shift := uint(64 - 8*size)
	return int64(v<<shift) >> shift
}

func truncate(v uint64, size int) uint64 {
	if size >= 8 {
		return v
	}
	return v & (1<<(8*uint(size)) - 1)
}

// compare is an ordering operator (<, <=, >, >=) on two numbers of the
// field's signedness; any other operator is false.
func compare[T int64 | uint64](op Op, a, b T) bool {
	switch op {
	case OpLT:
		return a < b
	case OpLE:
		return a <= b
	case OpGT:
		return a > b
	case OpGE:
		return a >= b
	}
	return false
}

// Eval is the predicate's result on one record.
func (p *Pred) Eval(rec []byte, ctx *Context) bool {
	fl := p.Field
	switch p.Kind {
	case KindEq:
		v := field(rec, fl.Offset, fl.Size)
		return (v == truncate(p.Val, fl.Size)) != p.Not
	case KindCmp:
		v := field(rec, fl.Offset, fl.Size)
		w := truncate(p.Val, fl.Size)
		if p.Op == OpBand {
			return v&w != 0
		}
		if fl.Signed {
			return compare(p.Op, signExtend(v, fl.Size), signExtend(w, fl.Size))
		}
		return compare(p.Op, v, w)
	case KindNumCPUMask:
		cpu := field(rec, fl.Offset, fl.Size)
		if cpu >= uint64(len(p.Mask)) || cpu >= uint64(ctx.cpus()) {
			return false
		}
		return scalarVsMask(p.Op, int(cpu), p.Mask)
	case KindComm:
		return p.Regex.Match(ctx.Comm[:], len(ctx.Comm)) != p.Not
	case KindString:
		if fl.Offset+fl.Size > len(rec) {
			return false
		}
		return p.Regex.Match(rec[fl.Offset:], p.Regex.FieldLen) != p.Not
	case KindStrLoc, KindStrRelLoc:
		item := field(rec, fl.Offset, 4)
		loc, n := int(item&0xffff), int(item>>16)
		if p.Kind == KindStrRelLoc {
			loc += fl.Offset + 4
		}
		if loc > len(rec) {
			return false
		}
		return p.Regex.Match(rec[loc:], n) != p.Not
	case KindPChar, KindPCharUser:
		if ctx.ReadString == nil {
			return false
		}
		s, ok := ctx.ReadString(field(rec, fl.Offset, 8), p.Kind == KindPCharUser, ustringBufSize)
		s = cstr(s)
		if ok && len(s) == 0 {
			return false
		}
		return p.Regex.Match(s, len(s)+1) != p.Not
	case KindCPU:
		cpu, cmp := int32(ctx.CPU), int32(p.Val)
		switch p.Op {
		case OpEQ:
			return cpu == cmp
		case OpNE:
			return cpu != cmp
		case OpLT:
			return cpu < cmp
		case OpLE:
			return cpu <= cmp
		case OpGT:
			return cpu > cmp
		case OpGE:
			return cpu >= cmp
		}
		return false
	case KindCPUCPUMask:
		return scalarVsMask(p.Op, ctx.CPU, p.Mask)
	case KindCPUMask, KindCPUMaskCPU:
		item := field(rec, fl.Offset, 4)
		loc := int(item & 0xffff)
		mask := make([]bool, ctx.cpus())
		for c := range mask {
			byteAt := loc + c/8
			if byteAt < len(rec) && rec[byteAt]&(1<<(c%8)) != 0 {
				mask[c] = true
			}
		}
		if p.Kind == KindCPUMaskCPU {
			return maskVsScalar(p.Op, mask, int(p.Val))
		}
		return maskVsMask(p.Op, mask, p.Mask)
	case KindFunction:
		addr := field(rec, fl.Offset, 8)
		in := addr >= p.Val && addr < p.Val2
		if p.Op == OpEQ {
			return in
		}
		return !in
	}
	return false
}

func (ctx *Context) cpus() int {
	if ctx.CPUs > 0 {
		return ctx.CPUs
	}
	return 1
}

func bit(m []bool, i int) bool { return i >= 0 && i < len(m) && m[i] }

// scalarVsMask compares one CPU with a list of several CPUs: never equal.
func scalarVsMask(op Op, cpu int, mask []bool) bool {
	switch op {
	case OpEQ:
		return false
	case OpNE:
		return true
	case OpBand:
		return bit(mask, cpu)
	}
	return false
}

func maskVsScalar(op Op, mask []bool, cpu int) bool {
	n := 0
	for _, b := range mask {
		if b {
			n++
		}
	}
	switch op {
	case OpEQ:
		return bit(mask, cpu) && n == 1
	case OpNE:
		return !bit(mask, cpu) || n > 1
	case OpBand:
		return bit(mask, cpu)
	}
	return false
}

func maskVsMask(op Op, a, b []bool) bool {
	eq, inter := true, false
	for i := 0; i < len(a) || i < len(b); i++ {
		x, y := bit(a, i), bit(b, i)
		if x != y {
			eq = false
		}
		if x && y {
			inter = true
		}
	}
	switch op {
	case OpEQ:
		return eq
	case OpNE:
		return !eq
	case OpBand:
		return inter
	}
	return false
}
