package kernel

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The symbol index cache keeps, beside the kallsyms text cache
// (kallsymscache.go) and under the same per-boot key, what parsing the
// text builds: every symbol's address, size, type and the places of its
// name and module in the text, the name hash table and the address
// index. Loading it maps the file and fills the symbol table from fixed
// records, with no text to parse, no hashing and no sorting: on the
// pinned 6.12 kernel under qemu's emulation, parsing 154,000 kallsyms
// lines was most of the time ktrace took from start to the first probe.
//
// File layout (little-endian, sections 8-byte aligned): the line
// symIndexMagic+key, padding, a header of five u64 (symbols, hash slots,
// address index entries, text bytes, module count), then the symbol
// records, the hash slots and chain (int32), the address index (int32)
// and its keys (u64), and the kallsyms text the names point into.

const symIndexMagic = "ktrace-symindex-v1 "

// symRecord is one symbol of a symTable, as the index file stores it.
type symRecord struct {
	Addr, Size      uint64
	NameOff, ModOff uint32
	NameLen         uint16
	ModLen          uint8
	Type            byte
	_               uint32
}

const symRecordSize = int(unsafe.Sizeof(symRecord{}))

// align8 rounds n up to a multiple of 8.
func align8(n int) int { return (n + 7) &^ 7 }

// symIndexHeader is the fixed part after the key line.
type symIndexHeader struct {
	Syms, Slots, Addrs, Text, Mods uint64
}

// loadSymbolIndex fills m's symbol table from the index file at path when
// it was written for key. The file is mapped and stays mapped: names and
// arrays point into it.
func (m *Model) loadSymbolIndex(path, key string) error {
	return useIndexFile(path, "symbol index", func(b []byte) error { return m.useSymbolIndex(b, key) })
}

// useIndexFile maps the per-boot index file at path (what names it in
// errors) and hands its bytes to use; the mapping stays when use accepts
// them, else it is released.
func useIndexFile(path, what string, use func(b []byte) error) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if st.Size() < 64 || st.Size() > 1<<31 {
		return errors.New(what + ": bad size")
	}
	b, err := unix.Mmap(int(f.Fd()), 0, int(st.Size()), unix.PROT_READ, unix.MAP_PRIVATE|unix.MAP_POPULATE)
	if err != nil {
		return err
	}
	if err := use(b); err != nil {
		unix.Munmap(b)
		return err
	}
	return nil
}

// useSymbolIndex checks an index file's content and makes the model use
// it.
func (m *Model) useSymbolIndex(b []byte, key string) error {
	head := symIndexMagic + key + "\n"
	if len(b) < len(head) || string(b[:len(head)]) != head {
		return errors.New("symbol index: not for this boot")
	}
	off := align8(len(head))
	const hsize = int(unsafe.Sizeof(symIndexHeader{}))
	if len(b) < off+hsize {
		return errors.New("symbol index: truncated")
	}
	var h symIndexHeader
	h.Syms = binary.LittleEndian.Uint64(b[off:])
	h.Slots = binary.LittleEndian.Uint64(b[off+8:])
	h.Addrs = binary.LittleEndian.Uint64(b[off+16:])
	h.Text = binary.LittleEndian.Uint64(b[off+24:])
	h.Mods = binary.LittleEndian.Uint64(b[off+32:])
	off += hsize
	if h.Syms == 0 || h.Syms > 1<<26 || h.Slots > 1<<28 || h.Slots&(h.Slots-1) != 0 || h.Slots < h.Syms || h.Addrs > h.Syms || h.Text > 1<<31 {
		return errors.New("symbol index: bad header")
	}
	ns, nslots, naddr := int(h.Syms), int(h.Slots), int(h.Addrs)
	want := off + ns*symRecordSize + align8(4*nslots) + align8(4*ns) + align8(4*naddr) + 8*naddr + int(h.Text)
	if len(b) != want {
		return errors.New("symbol index: truncated")
	}
	recs := unsafe.Slice((*symRecord)(unsafe.Pointer(&b[off])), ns)
	off += ns * symRecordSize
	slots := unsafe.Slice((*int32)(unsafe.Pointer(&b[off])), nslots)
	off += align8(4 * nslots)
	next := unsafe.Slice((*int32)(unsafe.Pointer(&b[off])), ns)
	off += align8(4 * ns)
	var addrIdx []int32
	var addrKeys []uint64
	if naddr > 0 {
		addrIdx = unsafe.Slice((*int32)(unsafe.Pointer(&b[off])), naddr)
		off += align8(4 * naddr)
		addrKeys = unsafe.Slice((*uint64)(unsafe.Pointer(&b[off])), naddr)
		off += 8 * naddr
	}
	text := b[off:]
	// The arrays are used as they lie, unchecked: the lookups bound what
	// they read (symindex.go), so a damaged index cannot crash ktrace,
	// and checking 150,000 entries up front cost more than the rest of
	// the load under emulation.
	all := unsafe.String(unsafe.SliceData(text), len(text))
	m.syms = symTable{recs: recs, text: all}
	m.modules = nil
	m.byName = symIndex{mask: uint64(nslots - 1), slots: slots, next: next}
	m.addrIdx, m.addrKeys = addrIdx, addrKeys
	return nil
}

// writeSymbolIndex writes m's symbol table as an index file for key at
// path, replacing it atomically. Failing to write only costs the next
// start its time.
func (m *Model) writeSymbolIndex(path, key string) {
	text := m.syms.text
	if len(text) == 0 || len(text) > 1<<31 {
		return
	}
	head := symIndexMagic + key + "\n"
	ns, nslots, naddr := m.syms.len(), len(m.byName.slots), len(m.addrIdx)
	size := align8(len(head)) + int(unsafe.Sizeof(symIndexHeader{})) + ns*symRecordSize + align8(4*nslots) + align8(4*ns) + align8(4*naddr) + 8*naddr + len(text)
	out := make([]byte, 0, size)
	out = append(out, head...)
	out = append(out, make([]byte, align8(len(out))-len(out))...)
	for _, v := range []uint64{uint64(ns), uint64(nslots), uint64(naddr), uint64(len(text)), uint64(len(m.moduleSet()))} {
		out = binary.LittleEndian.AppendUint64(out, v)
	}
	for i := range m.syms.recs {
		r := &m.syms.recs[i]
		out = binary.LittleEndian.AppendUint64(out, r.Addr)
		out = binary.LittleEndian.AppendUint64(out, r.Size)
		out = binary.LittleEndian.AppendUint32(out, r.NameOff)
		out = binary.LittleEndian.AppendUint32(out, r.ModOff)
		out = binary.LittleEndian.AppendUint16(out, r.NameLen)
		out = append(out, r.ModLen, r.Type, 0, 0, 0, 0)
	}
	appendInt32s := func(v []int32) {
		for _, x := range v {
			out = binary.LittleEndian.AppendUint32(out, uint32(x))
		}
		out = append(out, make([]byte, align8(len(out))-len(out))...)
	}
	appendInt32s(m.byName.slots)
	appendInt32s(m.byName.next)
	appendInt32s(m.addrIdx)
	for _, k := range m.addrKeys {
		out = binary.LittleEndian.AppendUint64(out, k)
	}
	out = append(out, text...)
	if len(out) != size {
		return
	}
	writeCacheFile(path, out)
}

// writeCacheFile replaces a cache file atomically: a temporary file in
// its directory (mode 0700, the file 0600), renamed over it.
func writeCacheFile(path string, b []byte) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return
	}
	f, err := os.CreateTemp(dir, ".cache-*")
	if err != nil {
		return
	}
	tmp := f.Name()
	_, err1 := f.Write(b)
	err2 := f.Close()
	if err1 != nil || err2 != nil || os.Rename(tmp, path) != nil {
		os.Remove(tmp)
	}
}

// symbolIndexFor is the index file and key for this boot's kallsyms, as
// the text cache keys them; ok is false when there is no cache.
func symbolIndexFor(bk bootKey) (path, key string, ok bool) {
	path, pathed := kallsymsCachePath("kallsyms-index", bk.release)
	return path, bk.key, bk.ok && pathed
}
