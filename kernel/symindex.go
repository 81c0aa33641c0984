package kernel

import "hash/maphash"

// symIndex finds kallsyms entries by name. It is an open-addressing hash
// table holding, per distinct name, the index of its first entry in
// kallsyms order, plus a chain linking every entry to the next entry of
// the same name. Unlike a map of slices it needs two pointer-free arrays
// and no allocation per name, which keeps loading a model with 150k-200k
// symbols cheap for the CLI and invisible to the garbage collector.
type symIndex struct {
	seed  maphash.Seed
	mask  uint64
	slots []int32 // 1 + index of the first entry with a name; 0 is empty
	next  []int32 // per entry: index of the next entry with its name, or -1
}

// build indexes syms by name.
func (x *symIndex) build(syms []Symbol) {
	size := uint64(16)
	for size < 2*uint64(len(syms)) {
		size <<= 1
	}
	x.seed = maphash.MakeSeed()
	x.mask = size - 1
	x.slots = make([]int32, size)
	x.next = make([]int32, len(syms))
	// tail[i] is the last entry so far of the chain headed by entry i.
	tail := make([]int32, len(syms))
	for i := range syms {
		x.next[i] = -1
		name := syms[i].Name
		for h := maphash.String(x.seed, name) & x.mask; ; h = (h + 1) & x.mask {
			s := x.slots[h]
			if s == 0 {
				x.slots[h] = int32(i) + 1
				tail[i] = int32(i)
				break
			}
			head := s - 1
			if syms[head].Name == name {
				x.next[tail[head]] = int32(i)
				tail[head] = int32(i)
				break
			}
		}
	}
}

// first returns the index of the first entry named name, or -1. The
// following ones are reached through next.
func (x *symIndex) first(syms []Symbol, name string) int32 {
	if len(x.slots) == 0 {
		return -1
	}
	for h := maphash.String(x.seed, name) & x.mask; ; h = (h + 1) & x.mask {
		s := x.slots[h]
		if s == 0 {
			return -1
		}
		if syms[s-1].Name == name {
			return s - 1
		}
	}
}
