package printfmt

import (
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
)

// Field is one "field:" line of a format file.
type Field struct {
	Name   string
	Type   string // the declaration without the name, array suffix kept ("char[16]")
	Offset int
	Size   int
	Signed bool
	// Count is the element count of a fixed array (0: not an array).
	Count int
	// DataLoc marks a __data_loc field (a u32: offset | length<<16 of data
	// in the record), RelLoc a __rel_loc one (the offset counts from the
	// field's end).
	DataLoc, RelLoc bool
	Common          bool
}

// isString reports whether a field holds characters.
func (f *Field) isString() bool {
	t := strings.TrimPrefix(strings.TrimPrefix(f.Type, "__data_loc "), "__rel_loc ")
	return strings.HasPrefix(t, "char[") || strings.HasPrefix(t, "const char[") || strings.HasPrefix(t, "unsigned char[")
}

// Event is a parsed format file.
type Event struct {
	System, Name string
	ID           int
	Fields       []Field
	// Fmt and Args are the print fmt's string and argument expressions;
	// ParseErr says why they could not be parsed (Render then fails).
	Fmt      string
	Args     []Expr
	ParseErr error
}

// Parse reads a format file of the event system/name.
func Parse(system, format string) (*Event, error) {
	ev := &Event{System: system}
	common := true
	for _, line := range strings.Split(format, "\n") {
		t := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(t, "name: "):
			ev.Name = strings.TrimPrefix(t, "name: ")
		case strings.HasPrefix(t, "ID: "):
			ev.ID, _ = strconv.Atoi(strings.TrimPrefix(t, "ID: "))
		case t == "" && len(ev.Fields) > 0:
			common = false
		case strings.HasPrefix(t, "field:"):
			f, err := parseField(t)
			if err != nil {
				return nil, fmt.Errorf("format of %s/%s: %w", system, ev.Name, err)
			}
			f.Common = common
			ev.Fields = append(ev.Fields, f)
		case strings.HasPrefix(t, "print fmt: "):
			ev.Fmt, ev.Args, ev.ParseErr = parsePrintFmt(strings.TrimPrefix(t, "print fmt: "))
		}
	}
	if ev.Name == "" {
		return nil, fmt.Errorf("format of %s: no name line", system)
	}
	return ev, nil
}

// FieldLine is what one "field:DECL; offset:N; size:N; signed:N;" line of
// a format file says.
type FieldLine struct {
	Decl   string // the C declaration, e.g. "char prev_comm[16]"
	Offset int
	Size   int
	Signed bool
}

// ParseFieldLine reads a "field:" line of a format file. A number that
// does not parse reads as strconv.Atoi returns it, and the first such is
// the error; the attributes after it are read all the same.
func ParseFieldLine(line string) (FieldLine, error) {
	var f FieldLine
	var first error
	for _, part := range strings.Split(line, ";") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), ":")
		if !ok {
			continue
		}
		var err error
		switch k {
		case "field":
			f.Decl = v
		case "offset":
			f.Offset, err = strconv.Atoi(v)
		case "size":
			f.Size, err = strconv.Atoi(v)
		case "signed":
			f.Signed = v == "1"
		}
		if err != nil && first == nil {
			first = err
		}
	}
	return f, first
}

func parseField(line string) (Field, error) {
	fl, err := ParseFieldLine(line)
	if err != nil {
		return Field{}, fmt.Errorf("field line %q: %w", line, err)
	}
	f := Field{Offset: fl.Offset, Size: fl.Size, Signed: fl.Signed}
	f.Name, f.Type = SplitDecl(fl.Decl)
	f.DataLoc = strings.HasPrefix(f.Type, "__data_loc ")
	f.RelLoc = strings.HasPrefix(f.Type, "__rel_loc ")
	if i := strings.IndexByte(f.Type, '['); i >= 0 && !f.DataLoc && !f.RelLoc {
		n, err := strconv.Atoi(strings.TrimSuffix(f.Type[i+1:], "]"))
		if err == nil && n > 0 {
			f.Count = n
		}
	}
	return f, nil
}

// SplitDecl splits a format field's C declaration "TYPE NAME" or
// "TYPE NAME[N]" into the name and the type with the array suffix moved to
// it. Only a final [N] is the name's: in "__data_loc char[] filename" the
// brackets belong to the type.
func SplitDecl(decl string) (name, typ string) {
	suffix := ""
	d := strings.TrimSpace(decl)
	if strings.HasSuffix(d, "]") {
		if i := strings.LastIndexByte(d, '['); i >= 0 {
			suffix, d = d[i:], d[:i]
		}
	}
	d = strings.TrimSpace(d)
	i := strings.LastIndexAny(d, " *")
	if i < 0 {
		return d, suffix
	}
	return d[i+1:], strings.TrimSpace(d[:i+1]) + suffix
}

// Field returns the field of that name.
func (e *Event) Field(name string) (*Field, bool) {
	for i := range e.Fields {
		if e.Fields[i].Name == name {
			return &e.Fields[i], true
		}
	}
	return nil, false
}

// uintAt reads an unsigned little-endian integer of size bytes.
func uintAt(rec []byte, off, size int) (uint64, error) {
	if off < 0 || off+size > len(rec) {
		return 0, fmt.Errorf("record of %d bytes has no %d bytes at %d", len(rec), size, off)
	}
	b := rec[off : off+size]
	switch size {
	case 1:
		return uint64(b[0]), nil
	case 2:
		return uint64(binary.LittleEndian.Uint16(b)), nil
	case 4:
		return uint64(binary.LittleEndian.Uint32(b)), nil
	case 8:
		return binary.LittleEndian.Uint64(b), nil
	}
	return 0, fmt.Errorf("integer of %d bytes", size)
}

// signExtend extends the sign of a size-byte value.
func signExtend(v uint64, size int) uint64 {
	if size >= 8 {
		return v
	}
	shift := uint(64 - 8*size)
	return uint64(int64(v<<shift) >> shift)
}

// cString is b up to its first NUL.
func cString(b []byte) string {
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}

// dynData is the data a __data_loc or __rel_loc field points at.
func (f *Field) dynData(rec []byte) ([]byte, error) {
	v, err := uintAt(rec, f.Offset, 4)
	if err != nil {
		return nil, err
	}
	off, n := int(v&0xffff), int(v>>16)
	if f.RelLoc {
		off += f.Offset + f.Size
	}
	if off+n > len(rec) {
		return nil, fmt.Errorf("field %s: data at %d+%d beyond the record's %d bytes", f.Name, off, n, len(rec))
	}
	return rec[off : off+n], nil
}

// Raw prints the event's own fields as name=value pairs separated by
// spaces: strings as text, other arrays as hex bytes, signed numbers in
// decimal, unsigned ones in hex when they are longs (8 bytes), else in
// decimal.
func (e *Event) Raw(rec []byte) string {
	var b strings.Builder
	for i := range e.Fields {
		f := &e.Fields[i]
		if f.Common {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(f.Name + "=")
		switch {
		case f.DataLoc || f.RelLoc:
			d, err := f.dynData(rec)
			if err != nil {
				b.WriteString("ERROR")
				continue
			}
			if f.isString() {
				b.WriteString(cString(d))
			} else {
				b.WriteString(hexBytes(d))
			}
		case f.Count > 0:
			if f.Offset+f.Size > len(rec) {
				b.WriteString("ERROR")
				continue
			}
			d := rec[f.Offset : f.Offset+f.Size]
			if f.isString() {
				b.WriteString(cString(d))
			} else {
				b.WriteString(hexBytes(d))
			}
		default:
			v, err := uintAt(rec, f.Offset, f.Size)
			if err != nil {
				b.WriteString("ERROR")
				continue
			}
			switch {
			case f.Signed:
				b.WriteString(strconv.FormatInt(int64(signExtend(v, f.Size)), 10))
			case f.Size == 8:
				b.WriteString("0x" + strconv.FormatUint(v, 16))
			default:
				b.WriteString(strconv.FormatUint(v, 10))
			}
		}
	}
	return b.String()
}

func hexBytes(d []byte) string {
	var b strings.Builder
	for i, c := range d {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%02x", c)
	}
	return b.String()
}
