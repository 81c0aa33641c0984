package kernel

import (
	"encoding/binary"
	"errors"
	"unsafe"
)

// The set index cache keeps the ftrace function set (a hashSet built from
// available_filter_functions) for one boot, under the kallsyms cache's
// key: its hash slots, the end of every name in one string of names, and
// that string. Loading maps the file and takes the slots as they lie, with
// no text to split and no names to hash: on the pinned 6.12 kernel under
// qemu's emulation, building the set from 40,000 lines took longer than
// loading every symbol from the symbol index.
//
// File layout (little-endian, sections 8-byte aligned): the line
// setIndexMagic+key, padding, a header of three u64 (names, hash slots,
// name bytes), the slots (int32), the name ends (u32) and the names.

const setIndexMagic = "ktrace-setindex-v1 "

// loadSetIndex returns the set the index file at path holds when it was
// written for key. The file stays mapped: the names point into it.
func loadSetIndex(path, key string) (hashSet, error) {
	var s hashSet
	err := useIndexFile(path, "set index", func(b []byte) (err error) {
		s, err = useSetIndex(b, key)
		return err
	})
	return s, err
}

// useSetIndex checks an index file's content and returns its set.
func useSetIndex(b []byte, key string) (hashSet, error) {
	head := setIndexMagic + key + "\n"
	if len(b) < len(head) || string(b[:len(head)]) != head {
		return hashSet{}, errors.New("set index: not for this boot")
	}
	off := align8(len(head))
	if len(b) < off+24 {
		return hashSet{}, errors.New("set index: truncated")
	}
	nn := binary.LittleEndian.Uint64(b[off:])
	ns := binary.LittleEndian.Uint64(b[off+8:])
	nb := binary.LittleEndian.Uint64(b[off+16:])
	off += 24
	if nn > 1<<26 || ns < 16 || ns > 1<<28 || ns&(ns-1) != 0 || ns < 2*nn || nb > 1<<31 {
		return hashSet{}, errors.New("set index: bad header")
	}
	n, nslots := int(nn), int(ns)
	if len(b) != off+align8(4*nslots)+align8(4*n)+int(nb) {
		return hashSet{}, errors.New("set index: truncated")
	}
	slots := unsafe.Slice((*int32)(unsafe.Pointer(&b[off])), nslots)
	off += align8(4 * nslots)
	var ends []uint32
	if n > 0 {
		ends = unsafe.Slice((*uint32)(unsafe.Pointer(&b[off])), n)
	}
	off += align8(4 * n)
	text := unsafe.String(unsafe.SliceData(b[off:]), int(nb))
	used := 0
	for _, v := range slots {
		if v < 0 || int(v) > n {
			return hashSet{}, errors.New("set index: bad hash slot")
		}
		if v != 0 {
			used++
		}
	}
	if used != n {
		// Lookups end at an empty slot: there must be one per name
		// missing, so that every probe ends.
		return hashSet{}, errors.New("set index: bad hash slots")
	}
	names := make([]string, n)
	start := uint32(0)
	for i, end := range ends {
		if end < start || int(end) > len(text) {
			return hashSet{}, errors.New("set index: bad name")
		}
		names[i] = text[start:end]
		start = end
	}
	return hashSet{names: names, slots: slots}, nil
}

// setIndexFor is the index file and key of this boot's copy of file
// (FileFilter), keyed as the kallsyms cache is; ok is false when there is
// no cache.
func setIndexFor(file string, bk bootKey) (path, key string, ok bool) {
	path, pathed := kallsymsCachePath(file+"-index", bk.release)
	return path, bk.key, bk.ok && pathed
}

// writeSetIndex writes set s as an index file for key at path, replacing
// it atomically. Failing to write only costs the next start its time.
func writeSetIndex(path, key string, s hashSet) {
	head := setIndexMagic + key + "\n"
	total := 0
	for _, name := range s.names {
		total += len(name)
	}
	if total > 1<<31 || len(s.slots) < 16 {
		return
	}
	n, nslots := len(s.names), len(s.slots)
	out := make([]byte, 0, align8(len(head))+24+align8(4*nslots)+align8(4*n)+total)
	out = append(out, head...)
	out = append(out, make([]byte, align8(len(out))-len(out))...)
	for _, v := range []uint64{uint64(n), uint64(nslots), uint64(total)} {
		out = binary.LittleEndian.AppendUint64(out, v)
	}
	for _, v := range s.slots {
		out = binary.LittleEndian.AppendUint32(out, uint32(v))
	}
	out = append(out, make([]byte, align8(len(out))-len(out))...)
	end := uint32(0)
	for _, name := range s.names {
		end += uint32(len(name))
		out = binary.LittleEndian.AppendUint32(out, end)
	}
	out = append(out, make([]byte, align8(len(out))-len(out))...)
	for _, name := range s.names {
		out = append(out, name...)
	}
	writeCacheFile(path, out)
}
