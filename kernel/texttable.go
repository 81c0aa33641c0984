package kernel

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sort"
)

// FileTextTable is the snapshot member holding what the model needs from
// the kernel image when the image itself is not shipped (the embedded
// snapshot): which function entries start with ENDBR64 and where every
// instruction of the kernel text starts.
const FileTextTable = "text-table"

// textTable is the decoded FileTextTable.
//
// The address sets are the member's sorted lists searched in place rather
// than hash sets: building maps of a few hundred thousand addresses cost
// the CLI most of a second per run, for the handful of lookups one probe
// line needs.
type textTable struct {
	sections    []bitmapSection
	undecodable undecodableList // symbol address -> address where decoding failed
	endbr       addrSet         // symbol addresses starting with ENDBR64
	ftrace      addrSet         // symbol addresses with an ftrace call site
	reserved    []reservedSite  // patch sites kprobes refuse, sorted
	int3        addrRuns        // instruction starts holding int3
	exception   addrSet         // instruction starts holding another exception instruction
	retSites    addrSet         // return-thunk jumps (see returnSites), sorted
}

// addrSet is a sorted list of addresses.
type addrSet []uint64

func (s addrSet) has(addr uint64) bool {
	_, ok := slices.BinarySearch(s, addr)
	return ok
}

// decodeAddrList reads n delta-encoded addresses from b and returns them
// sorted with the rest of b. The generator writes ascending deltas;
// anything else (a wrapped delta) is put in order rather than misread.
func decodeAddrList(b []byte, n uint64) ([]uint64, []byte, error) {
	list := make([]uint64, 0, n)
	prev := uint64(0)
	for i := uint64(0); i < n; i++ {
		d, k := binary.Uvarint(b)
		if k <= 0 {
			return nil, nil, errTextTable
		}
		b = b[k:]
		prev += d
		list = append(list, prev)
	}
	if !slices.IsSorted(list) {
		slices.Sort(list)
	}
	return list, b, nil
}

// decodeAddrRuns is decodeAddrList for a list stored as runs, without
// materialising the addresses when they come in order.
func decodeAddrRuns(b []byte, n uint64) (addrRuns, []byte, error) {
	var r addrRuns
	rest, prev := b, uint64(0)
	for i := uint64(0); i < n; i++ {
		var v uint64
		var k int
		if len(rest) > 0 && rest[0] < 0x80 {
			v, k = uint64(rest[0]), 1 // the common one-byte delta
		} else if v, k = binary.Uvarint(rest); k <= 0 {
			return addrRuns{}, nil, errTextTable
		}
		if prev+v < prev {
			// Wrapped: out of order, sort a full list instead.
			list, rest, err := decodeAddrList(b, n)
			if err != nil {
				return addrRuns{}, nil, err
			}
			return runsOf(list), rest, nil
		}
		rest = rest[k:]
		prev += v
		r.add(prev)
	}
	return r, rest, nil
}

// addrRuns is a set of addresses stored as sorted, disjoint runs of
// consecutive addresses [start[i], end[i]).
type addrRuns struct {
	start, end []uint64
}

// add appends addr, which must not be below the last address added.
func (r *addrRuns) add(addr uint64) {
	if k := len(r.end); k > 0 && addr <= r.end[k-1] {
		if addr == r.end[k-1] {
			r.end[k-1]++
		}
		return
	}
	r.start = append(r.start, addr)
	r.end = append(r.end, addr+1)
}

func (r *addrRuns) has(addr uint64) bool {
	i, found := slices.BinarySearch(r.start, addr)
	return found || (i > 0 && addr < r.end[i-1])
}

// runsOf builds the runs of a sorted list.
func runsOf(sorted []uint64) addrRuns {
	var r addrRuns
	for _, a := range sorted {
		r.add(a)
	}
	return r
}

// undecodableList maps symbol addresses (sorted, unique) to the address
// where decoding their instructions failed.
type undecodableList struct {
	sym, fail []uint64
}

// sortKeepLast orders the entries by symbol address, keeping the last
// entry written for a repeated address.
func (u *undecodableList) sortKeepLast() {
	idx := make([]int, len(u.sym))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(u.sym[a], u.sym[b]) })
	sym, fail := make([]uint64, 0, len(idx)), make([]uint64, 0, len(idx))
	for _, i := range idx {
		if n := len(sym); n > 0 && sym[n-1] == u.sym[i] {
			fail[n-1] = u.fail[i]
			continue
		}
		sym, fail = append(sym, u.sym[i]), append(fail, u.fail[i])
	}
	u.sym, u.fail = sym, fail
}

func (u *undecodableList) lookup(sym uint64) (uint64, bool) {
	if i, ok := slices.BinarySearch(u.sym, sym); ok {
		return u.fail[i], true
	}
	return 0, false
}

// bitmapSection marks instruction starts: bit i of bits is addr+i.
type bitmapSection struct {
	addr, size uint64
	bits       []byte
}

func (s *bitmapSection) has(addr uint64) bool {
	o := addr - s.addr
	return s.bits[o/8]&(1<<(o%8)) != 0
}

// TextTable computes the FileTextTable member from the model's kernel
// image: for every symbol in an executable section (first alias per
// address), the instruction starts from its address to the next symbol, as
// InsnBoundary would decode them, whether it starts with ENDBR64 and
// whether it has an ftrace call site; the patch sites kprobes refuse;
// which instructions are int3 or other exception instructions; and the
// return-thunk jumps.
// go generate uses it to give the embedded snapshot instruction-level
// checks without shipping vmlinuz.
func (m *Model) TextTable() ([]byte, error) {
	img, err := m.loadImage()
	if err != nil {
		return nil, err
	}
	var endbr, ftrace, int3s, excs []uint64
	var undecodable [][2]uint64 // symbol address, failing instruction address
	type sec struct {
		addr, size uint64
		bits       []byte
	}
	secs := make([]sec, len(img.sections))
	for i, s := range img.sections {
		secs[i] = sec{s.addr, uint64(len(s.data)), make([]byte, (len(s.data)+7)/8)}
	}
	for si, s := range img.sections {
		lo, hi := s.addr, s.addr+uint64(len(s.data))
		for _, idx := range m.addrIdx {
			sym := m.syms.at(int(idx))
			if sym.Addr < lo || sym.Addr >= hi {
				continue
			}
			code := s.data[sym.Addr-lo:]
			if isEndbr(code) {
				endbr = append(endbr, sym.Addr)
			}
			if m.imageFtraceSite(img, sym) {
				ftrace = append(ftrace, sym.Addr)
			}
			end := sym.Addr + sym.Size
			if sym.Size == 0 || end > hi {
				end = hi
			}
			for pc := sym.Addr; pc < end; {
				o := pc - lo
				secs[si].bits[o/8] |= 1 << (o % 8)
				if i3, exc := exceptionInsn(s.data[o:]); i3 {
					int3s = append(int3s, pc)
				} else if exc {
					excs = append(excs, pc)
				}
				n := insnLen(s.data[o:])
				if n == 0 {
					undecodable = append(undecodable, [2]uint64{sym.Addr, pc})
					break
				}
				pc += uint64(n)
			}
		}
	}
	var out []byte
	out = binary.AppendUvarint(out, uint64(len(secs)))
	for _, s := range secs {
		out = binary.AppendUvarint(out, s.addr)
		out = binary.AppendUvarint(out, s.size)
		out = append(out, s.bits...)
	}
	sort.Slice(undecodable, func(i, j int) bool { return undecodable[i][0] < undecodable[j][0] })
	out = binary.AppendUvarint(out, uint64(len(undecodable)))
	prev := uint64(0)
	for _, u := range undecodable {
		out = binary.AppendUvarint(out, u[0]-prev)
		out = binary.AppendUvarint(out, u[1]-u[0])
		prev = u[0]
	}
	out = binary.AppendUvarint(out, uint64(len(img.reserved)))
	prev = 0
	for _, r := range img.reserved {
		out = binary.AppendUvarint(out, r.addr-prev)
		out = append(out, r.size, byte(r.kind))
		prev = r.addr
	}
	for _, list := range [][]uint64{endbr, ftrace, int3s, excs, img.retSites} {
		sort.Slice(list, func(i, j int) bool { return list[i] < list[j] })
		out = binary.AppendUvarint(out, uint64(len(list)))
		prev = 0
		for _, a := range list {
			out = binary.AppendUvarint(out, a-prev)
			prev = a
		}
	}
	return out, nil
}

var errTextTable = errors.New("malformed text table")

// parseTextTable decodes a FileTextTable member.
func parseTextTable(b []byte) (*textTable, error) {
	next := func() (uint64, error) {
		v, n := binary.Uvarint(b)
		if n <= 0 {
			return 0, errTextTable
		}
		b = b[n:]
		return v, nil
	}
	t := &textTable{}
	nsec, err := next()
	if err != nil || nsec > 1024 {
		return nil, errTextTable
	}
	for i := uint64(0); i < nsec; i++ {
		addr, err1 := next()
		size, err2 := next()
		if err1 != nil || err2 != nil || size > 8*uint64(len(b)) || (size+7)/8 > uint64(len(b)) {
			return nil, fmt.Errorf("%w: section %d", errTextTable, i)
		}
		n := (size + 7) / 8
		t.sections = append(t.sections, bitmapSection{addr: addr, size: size, bits: b[:n:n]})
		b = b[n:]
	}
	n, err := next()
	if err != nil || n > uint64(len(b)) {
		return nil, errTextTable
	}
	u := &t.undecodable
	u.sym, u.fail = make([]uint64, 0, n), make([]uint64, 0, n)
	prev := uint64(0)
	for i := uint64(0); i < n; i++ {
		d, err1 := next()
		o, err2 := next()
		if err1 != nil || err2 != nil {
			return nil, errTextTable
		}
		if i > 0 && d == 0 {
			// A repeated symbol: the later entry wins.
			u.fail[len(u.fail)-1] = prev + o
			continue
		}
		prev += d
		u.sym = append(u.sym, prev)
		u.fail = append(u.fail, prev+o)
	}
	if !slices.IsSorted(u.sym) {
		u.sortKeepLast()
	}
	if n, err = next(); err != nil || n > uint64(len(b)) {
		return nil, errTextTable
	}
	t.reserved = make([]reservedSite, 0, n)
	prev = 0
	for i := uint64(0); i < n; i++ {
		d, err := next()
		if err != nil || len(b) < 2 {
			return nil, errTextTable
		}
		prev += d
		t.reserved = append(t.reserved, reservedSite{addr: prev, size: b[0], kind: siteKind(b[1])})
		b = b[2:]
	}
	for _, dst := range []*addrSet{&t.endbr, &t.ftrace, nil, &t.exception, &t.retSites} {
		if n, err = next(); err != nil || n > uint64(len(b)) {
			return nil, errTextTable
		}
		if dst == nil {
			// The int3 list (several million addresses, mostly the
			// padding between functions) is kept as runs.
			if t.int3, b, err = decodeAddrRuns(b, n); err != nil {
				return nil, err
			}
			continue
		}
		var list []uint64
		if list, b, err = decodeAddrList(b, n); err != nil {
			return nil, err
		}
		*dst = list
	}
	if len(b) != 0 {
		return nil, fmt.Errorf("%w: %d trailing bytes", errTextTable, len(b))
	}
	sort.Slice(t.sections, func(i, j int) bool { return t.sections[i].addr < t.sections[j].addr })
	return t, nil
}

// loadTextTable decodes the snapshot's text table once, on first use.
func (m *Model) loadTextTable() *textTable {
	m.tableOnce.Do(func() {
		if m.tableOpen == nil {
			return
		}
		b, err := m.tableOpen()
		if err != nil {
			return
		}
		m.table, _ = parseTextTable(b)
	})
	return m.table
}

// tableBoundary answers InsnBoundary from the text table.
func (t *textTable) boundary(sym Symbol, addr uint64) (ok, checked bool) {
	i := sort.Search(len(t.sections), func(i int) bool { return t.sections[i].addr > sym.Addr })
	if i == 0 {
		return false, false
	}
	s := &t.sections[i-1]
	if sym.Addr-s.addr >= s.size || addr-s.addr >= s.size || addr < sym.Addr {
		return false, false
	}
	if s.has(addr) {
		return true, true
	}
	if fail, bad := t.undecodable.lookup(sym.Addr); bad && fail < addr {
		return false, false // decoding stopped before addr
	}
	return false, true
}
