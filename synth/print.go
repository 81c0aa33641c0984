package synth

import (
	"bytes"
	"encoding/binary"
	"strconv"
)

// AppendPrint appends the body of a record of the event as the kernel's
// print_synth_event prints it after "NAME: ": "FIELD=VALUE" per field,
// separated by spaces. rec is the record from its common fields on, laid
// out as FormatFields says.
//
// A numeric field's value goes through print_synth_event_num_val: cast to
// an unsigned type of the field's size and printed with the type's format,
// so a 1- or 2-byte signed field prints its unsigned value, a 4-byte one
// its signed value under %d. A string prints up to its NUL, at most
// StrVarLenMax bytes. gfp_t prints its hexadecimal value only (the kernel
// adds the flags' names, which ktrace does not know).
func (e *Event) AppendPrint(b []byte, rec []byte) []byte {
	return e.AppendPrintStack(b, rec, nil)
}

// StackText gives the text of each frame of a stack field (%pS: the
// function, +offset/size), given the frames the record holds; it may
// take frames off, as a reader of a BPF program's stack must. Nil
// prints each address in hex.
type StackText func(pcs []uint64) []string

// AppendPrintStack is AppendPrint, with stack fields printed through
// stack: "STACK:" and a "=> FRAME" line per frame up to the first zero,
// each ending in a newline, as print_synth_event prints them.
func (e *Event) AppendPrintStack(b []byte, rec []byte, stack StackText) []byte {
	off := 8
	for i, f := range e.Fields {
		if i > 0 {
			b = append(b, ' ')
		}
		b = append(b, f.Name...)
		b = append(b, '=')
		switch {
		case f.String && f.Dynamic:
			if off+4 <= len(rec) {
				loc := binary.LittleEndian.Uint32(rec[off:])
				b = appendCString(b, rec, int(loc&0xffff), int(loc>>16))
			}
			off += 8
		case f.String:
			b = appendCString(b, rec, off, StrVarLenMax)
			off += StrVarLenMax
		case f.Stack:
			b = append(b, "STACK:\n"...)
			var pcs []uint64
			if off+4 <= len(rec) {
				loc := binary.LittleEndian.Uint32(rec[off:])
				start, n := int(loc&0xffff), int(loc>>16)
				for p := start; p+8 <= start+n && p+8 <= len(rec); p += 8 {
					pc := binary.LittleEndian.Uint64(rec[p:])
					if pc == 0 {
						break
					}
					pcs = append(pcs, pc)
				}
			}
			var lines []string
			if stack != nil {
				lines = stack(pcs)
			} else {
				for _, pc := range pcs {
					lines = append(lines, "0x"+strconv.FormatUint(pc, 16))
				}
			}
			for _, l := range lines {
				b = append(b, "=> "...)
				b = append(b, l...)
				b = append(b, '\n')
			}
			off += 8
		default:
			var v uint64
			if off+8 <= len(rec) {
				v = binary.LittleEndian.Uint64(rec[off:])
			}
			b = appendNum(b, f, v)
			off += 8
		}
	}
	return b
}

// appendNum prints v as print_synth_event_num_val does for field f.
func appendNum(b []byte, f Field, v uint64) []byte {
	format := "%llu"
	if n, ok := numericTypes[f.Type]; ok {
		format = n.fmt
	}
	switch f.Size {
	case 1:
		v &= 0xff
	case 2:
		v &= 0xffff
	case 4:
		v &= 0xffffffff
		if format == "%d" {
			return strconv.AppendInt(b, int64(int32(uint32(v))), 10)
		}
	}
	switch format {
	case "%lld", "%ld":
		return strconv.AppendInt(b, int64(v), 10)
	case "%x":
		return strconv.AppendUint(b, v, 16)
	}
	return strconv.AppendUint(b, v, 10)
}

// appendCString appends the NUL-terminated string at rec[off:], at most n
// bytes of it.
func appendCString(b, rec []byte, off, n int) []byte {
	if off < 0 || off >= len(rec) {
		return b
	}
	s := rec[off:]
	if len(s) > n {
		s = s[:n]
	}
	if i := bytes.IndexByte(s, 0); i >= 0 {
		s = s[:i]
	}
	return append(b, s...)
}
