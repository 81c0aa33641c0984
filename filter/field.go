package filter

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/ktrace-dev/ktrace/grammar"
)

// Class is how the filter treats a field (the kernel's filter_type).
type Class int

const (
	// Numeric is any field that is not one of the others (FILTER_OTHER).
	Numeric Class = iota
	// StaticString is a char array inside the record ("char comm[16]").
	StaticString
	// DynString is a __data_loc char array: a u32 in the record giving the
	// string's offset (low 16 bits) and length (high 16 bits).
	DynString
	// RelDynString is a __rel_loc char array: like DynString, the offset
	// counted from the end of the u32.
	RelDynString
	// PtrString is a "char *" or "const char *" field: a pointer to a
	// kernel string.
	PtrString
	// CPUMask is a __data_loc cpumask_t field (Linux 6.6+).
	CPUMask
	// CPU is the generic cpu/CPU/common_cpu field: the CPU the event fires on.
	CPU
	// Comm is the generic comm/COMM field: the current task's command.
	Comm
	// Stacktrace is the generic stacktrace/STACKTRACE field (Linux 6.5+),
	// meaningful only to hist triggers.
	Stacktrace
)

// Field is one field of an event as the filter sees it.
type Field struct {
	Name string
	// Type is the C type with any array suffix moved onto it, as the
	// kernel defines the field: "u64", "char[16]", "__data_loc char[]".
	Type   string
	Offset int
	Size   int
	Signed bool
	Class  Class
}

// IsString reports whether the field compares with quoted strings
// (is_string_field).
func (f *Field) IsString() bool {
	switch f.Class {
	case StaticString, DynString, RelDynString, PtrString, Comm:
		return true
	}
	return false
}

// ClassOf classifies a field type the way filter_assign_type does. cpumask
// says whether the kernel knows cpumask fields (Linux 6.6+).
func ClassOf(typ string, cpumask bool) Class {
	if strings.Contains(typ, "__data_loc") {
		if strings.Contains(typ, "char") {
			return DynString
		}
		if cpumask && strings.Contains(typ, "cpumask_t") {
			return CPUMask
		}
	}
	if strings.Contains(typ, "__rel_loc") && strings.Contains(typ, "char") {
		return RelDynString
	}
	if strings.Contains(typ, "[") && strings.Contains(typ, "char") {
		return StaticString
	}
	if typ == "char *" || typ == "const char *" {
		return PtrString
	}
	return Numeric
}

// Event is the field list of one event: its own fields and the common
// header fields, in format-file order.
type Event struct {
	Fields []Field
	Common []Field
}

// FieldsFromFormat reads the fields of an events/GROUP/EVENT/format text.
// The fields before the first blank line of the format section are the
// common ones. cpumask is as for ClassOf.
func FieldsFromFormat(format string, cpumask bool) (*Event, error) {
	ev := &Event{}
	inFormat, common := false, true
	for n, line := range strings.Split(format, "\n") {
		switch {
		case line == "format:":
			inFormat = true
			continue
		case !inFormat:
			continue
		case strings.TrimSpace(line) == "":
			if common && len(ev.Common) > 0 {
				common = false
			}
			continue
		case strings.HasPrefix(line, "print fmt:"):
			return ev, nil
		}
		f, err := parseFieldLine(line)
		if err != nil {
			return nil, fmt.Errorf("filter: format line %d: %w", n+1, err)
		}
		f.Class = ClassOf(f.Type, cpumask)
		if common {
			ev.Common = append(ev.Common, f)
		} else {
			ev.Fields = append(ev.Fields, f)
		}
	}
	return ev, nil
}

// parseFieldLine parses "\tfield:TYPE NAME;\toffset:N;\tsize:N;\tsigned:N;".
func parseFieldLine(line string) (Field, error) {
	var f Field
	parts := strings.Split(strings.TrimSpace(line), ";")
	for _, p := range parts {
		p = strings.TrimSpace(p)
		key, val, ok := strings.Cut(p, ":")
		if !ok {
			continue
		}
		switch key {
		case "field":
			decl := strings.TrimSpace(val)
			i := strings.LastIndexAny(decl, " \t")
			if i < 0 {
				return f, fmt.Errorf("field %q has no type", decl)
			}
			typ, name := strings.TrimSpace(decl[:i]), decl[i+1:]
			if j := strings.IndexByte(name, '['); j >= 0 {
				typ += name[j:]
				name = name[:j]
			}
			f.Name, f.Type = name, typ
		case "offset", "size", "signed":
			v, err := strconv.Atoi(val)
			if err != nil {
				return f, fmt.Errorf("%s: %w", key, err)
			}
			switch key {
			case "offset":
				f.Offset = v
			case "size":
				f.Size = v
			default:
				f.Signed = v != 0
			}
		}
	}
	if f.Name == "" {
		return f, fmt.Errorf("no field in %q", line)
	}
	return f, nil
}

// genericFields are the fields every event has besides its own, as the
// kernel defines them: no record slot (size 0).
var genericFields = []Field{
	{Name: "CPU", Type: "int", Signed: true, Class: CPU},
	{Name: "cpu", Type: "int", Signed: true, Class: CPU},
	{Name: "common_cpu", Type: "int", Signed: true, Class: CPU},
	{Name: "COMM", Type: "char *", Class: Comm},
	{Name: "comm", Type: "char *", Class: Comm},
	{Name: "stacktrace", Type: "char *", Class: Stacktrace},
	{Name: "STACKTRACE", Type: "char *", Class: Stacktrace},
}

// Lookup finds a field as trace_find_event_field does: the event's own
// fields, then the generic ones, then the common header.
func (ev *Event) Lookup(name string, d *grammar.Dialect) *Field {
	for i := range ev.Fields {
		if ev.Fields[i].Name == name {
			return &ev.Fields[i]
		}
	}
	for i := range genericFields {
		g := &genericFields[i]
		if g.Class == Stacktrace && !d.FilterStacktrace {
			continue
		}
		if g.Name == name {
			return g
		}
	}
	for i := range ev.Common {
		if ev.Common[i].Name == name {
			return &ev.Common[i]
		}
	}
	return nil
}
