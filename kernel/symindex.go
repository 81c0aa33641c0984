package kernel

import (
	"encoding/binary"
	"fmt"
	"math/bits"
	"unsafe"
)

// symIndex finds kallsyms entries by name. It is an open-addressing hash
// table holding, per distinct name, the index of its first entry in
// kallsyms order, plus a chain linking every entry to the next entry of
// the same name. Unlike a map of slices it needs two pointer-free arrays
// and no allocation per name, which keeps loading a model with 150k-200k
// symbols cheap for the CLI and invisible to the garbage collector. The
// hash is fixed (not seeded per process), so that the arrays can be kept
// in the per-boot symbol cache and used as they are (symcache.go).
type symIndex struct {
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
	x.mask = size - 1
	x.slots = make([]int32, size)
	x.next = make([]int32, len(syms))
	// tail[i] is the last entry so far of the chain headed by entry i.
	tail := make([]int32, len(syms))
	for i := range syms {
		x.next[i] = -1
		name := syms[i].Name
		for h := nameHash(name) & x.mask; ; h = (h + 1) & x.mask {
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
// following ones are reached through nextOf.
//
// A loaded symbol index is used as it lies, unchecked (checking every
// entry was a good part of loading it): so the lookups bound what they
// read, and a damaged index makes a name missing, never a crash or an
// endless probe.
func (x *symIndex) first(syms *symTable, name string) int32 {
	if len(x.slots) == 0 {
		return -1
	}
	h := nameHash(name) & x.mask
	for range x.slots {
		s := x.slots[h]
		if s <= 0 || int(s) > syms.len() {
			return -1
		}
		if syms.name(int(s-1)) == name {
			return s - 1
		}
		h = (h + 1) & x.mask
	}
	return -1
}

// nextOf returns the entry after i with i's name, or -1. Chains run in
// kallsyms order: a link that does not go forward ends the chain.
func (x *symIndex) nextOf(i int32) int32 {
	if i < 0 || int(i) >= len(x.next) {
		return -1
	}
	if n := x.next[i]; n > i && int(n) < len(x.next) {
		return n
	}
	return -1
}

// nameHash hashes a symbol name eight bytes at a time (multiply and fold).
func nameHash(s string) uint64 {
	h := uint64(len(s)) ^ 0x9e3779b97f4a7c15
	for len(s) >= 8 {
		hi, lo := bits.Mul64(h^binary.LittleEndian.Uint64([]byte(s[:8])), 0xa0761d6478bd642f)
		h = hi ^ lo
		s = s[8:]
	}
	var tail uint64
	for i := 0; i < len(s); i++ {
		tail |= uint64(s[i]) << (8 * i)
	}
	hi, lo := bits.Mul64(h^tail, 0xe7037ed1a0b428db)
	return hi ^ lo
}

// hashSet is a set of names (the ftrace function list): the distinct
// names in one slice and an open-addressing table of their indices,
// hashed with nameHash. Building it allocates two arrays, not a map
// entry per name: reading available_filter_functions into a Go map was,
// under qemu's emulation, a good part of ktrace's start.
type hashSet struct {
	names []string
	slots []int32 // 1 + index into names; 0 is empty
}

// newHashSet returns a set sized for about n names.
func newHashSet(n int) hashSet {
	size := 16
	for size < 2*n {
		size <<= 1
	}
	return hashSet{names: make([]string, 0, n), slots: make([]int32, size)}
}

// find returns the slot of name, or of the empty slot where it would go.
func (s *hashSet) find(name string) uint64 {
	mask := uint64(len(s.slots) - 1)
	for h := nameHash(name) & mask; ; h = (h + 1) & mask {
		if v := s.slots[h]; v == 0 || s.names[v-1] == name {
			return h
		}
	}
}

// add puts name in the set.
func (s *hashSet) add(name string) {
	if 2*(len(s.names)+1) > len(s.slots) {
		old := s.names
		*s = newHashSet(2 * len(old))
		for _, n := range old {
			s.add(n)
		}
	}
	h := s.find(name)
	if s.slots[h] == 0 {
		s.names = append(s.names, name)
		s.slots[h] = int32(len(s.names))
	}
}

// has reports whether name is in the set.
func (s *hashSet) has(name string) bool {
	return len(s.slots) > 0 && s.slots[s.find(name)] != 0
}

// len returns the number of names in the set.
func (s *hashSet) len() int { return len(s.names) }

// symTable is the kallsyms table: one fixed, pointer-free record per
// symbol (symRecord) whose name and module are places in the kallsyms
// text. A loaded symbol index (symcache.go) is used as it lies in its
// mapping; a parsed kallsyms is converted once. Either way the garbage
// collector has no 150,000 string headers to scan.
type symTable struct {
	recs []symRecord
	text string
}

// newSymTable converts syms, whose names and modules are substrings of
// text, into a table. It fails when one is not.
func newSymTable(syms []Symbol, text string) (symTable, error) {
	base := uintptr(unsafe.Pointer(unsafe.StringData(text)))
	place := func(s string) (uint32, bool) {
		if s == "" {
			return 0, true
		}
		p := uintptr(unsafe.Pointer(unsafe.StringData(s)))
		if p < base || p+uintptr(len(s)) > base+uintptr(len(text)) {
			return 0, false
		}
		return uint32(p - base), true
	}
	recs := make([]symRecord, len(syms))
	for i := range syms {
		s := &syms[i]
		no, ok1 := place(s.Name)
		mo, ok2 := place(s.Module)
		if !ok1 || !ok2 || len(s.Name) > 0xffff || len(s.Module) > 0xff {
			return symTable{}, fmt.Errorf("symbol %q: name outside the kallsyms text or too long", s.Name)
		}
		recs[i] = symRecord{Addr: s.Addr, Size: s.Size, NameOff: no, ModOff: mo, NameLen: uint16(len(s.Name)), ModLen: uint8(len(s.Module)), Type: s.Type}
	}
	return symTable{recs: recs, text: text}, nil
}

// len returns the number of symbols.
func (t *symTable) len() int { return len(t.recs) }

// name returns symbol i's name ("" for an entry a damaged index gets
// wrong).
func (t *symTable) name(i int) string {
	if i < 0 || i >= len(t.recs) {
		return ""
	}
	r := &t.recs[i]
	return t.slice(r.NameOff, int(r.NameLen))
}

// at returns symbol i (the zero Symbol for an index out of range).
func (t *symTable) at(i int) Symbol {
	if i < 0 || i >= len(t.recs) {
		return Symbol{}
	}
	r := &t.recs[i]
	s := Symbol{Name: t.slice(r.NameOff, int(r.NameLen)), Addr: r.Addr, Size: r.Size, Type: r.Type}
	if r.ModLen > 0 {
		s.Module = t.slice(r.ModOff, int(r.ModLen))
	}
	return s
}

// slice returns n bytes of the text from off, or "" when they are not in
// it.
func (t *symTable) slice(off uint32, n int) string {
	if int(off)+n > len(t.text) {
		return ""
	}
	return t.text[off : int(off)+n]
}
