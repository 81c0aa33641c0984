package events

import (
	"fmt"
	"strings"
)

// commonFields is the fixed head of every event's format file.
const commonFields = "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n" +
	"\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n" +
	"\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n" +
	"\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n"

// Format returns the text of events/GROUP/NAME/format as the kernel prints
// it: the common fields, the probe header fields (__probe_ip for entry
// kinds; __probe_func and __probe_ret_ip for return kinds), one field per
// argument packed without alignment, and the print fmt line.
func (e *Event) Format() string {
	var b strings.Builder
	fmt.Fprintf(&b, "name: %s\nID: %d\nformat:\n", e.Name, e.ID)
	b.WriteString(commonFields)
	if e.Kind == Synthetic {
		e.Synth.FormatFields(&b)
		b.WriteString("\nprint fmt: ")
		b.WriteString(e.Synth.PrintFmt())
		b.WriteByte('\n')
		return b.String()
	}
	off := 8
	head := `"(%lx)`
	headArgs := ", REC->__probe_ip"
	switch {
	case e.Kind == Eprobe:
		// The arguments follow the common fields; the print fmt has
		// no head.
		off, head, headArgs = 8, `"`, ""
	case e.Kind.IsReturn():
		b.WriteString("\tfield:unsigned long __probe_func;\toffset:8;\tsize:8;\tsigned:0;\n")
		b.WriteString("\tfield:unsigned long __probe_ret_ip;\toffset:16;\tsize:8;\tsigned:0;\n")
		off = 24
		head = `"(%lx <- %lx)`
		headArgs = ", REC->__probe_func, REC->__probe_ret_ip"
	default:
		b.WriteString("\tfield:unsigned long __probe_ip;\toffset:8;\tsize:8;\tsigned:0;\n")
		off = 16
	}
	for _, a := range e.Args {
		signed := 0
		if a.Signed() {
			signed = 1
		}
		typ, name := fieldDecl(a.FieldType(), a.Name)
		fmt.Fprintf(&b, "\tfield:%s %s;\toffset:%d;\tsize:%d;\tsigned:%d;\n", typ, name, off, a.Size, signed)
		off += a.Size
	}
	b.WriteString("\nprint fmt: ")
	b.WriteString(head)
	for _, a := range e.Args {
		b.WriteByte(' ')
		b.WriteString(a.Name)
		b.WriteByte('=')
		b.WriteString(a.PrintFmt())
	}
	b.WriteByte('"')
	b.WriteString(headArgs)
	for _, a := range e.Args {
		b.WriteString(", ")
		b.WriteString(a.PrintArgs())
	}
	b.WriteByte('\n')
	return b.String()
}

// fieldDecl splits a field type as the kernel's format printer does: a
// trailing array suffix "[N]" of a non-__data_loc type moves behind the
// name and loses its length ("u32[4]" prints as "u32 name[]"), while
// __data_loc types are printed whole.
func fieldDecl(typ, name string) (string, string) {
	if strings.HasPrefix(typ, "__data_loc") {
		return typ, name
	}
	if i := strings.IndexByte(typ, '['); i >= 0 {
		return typ[:i], name + "[]"
	}
	return typ, name
}
