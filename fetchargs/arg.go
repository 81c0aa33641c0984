package fetchargs

import (
	"fmt"
	"strings"
)

// Arg is one accepted fetch argument: its name, the body as the kernel
// stores and reads it back, its resolved type and its fetch program.
type Arg struct {
	Name  string // argument name (explicit, BTF-derived or argN)
	Body  string // text read back after "name=" (rewritten for $argN, $arg*, %pd)
	Type  *Type  // resolved store type; for bitfields the container type
	Count int    // array element count, 0 for a scalar
	Size  int    // bytes in the record's fixed part: Type.Size, times Count for arrays
	Ops   []Op   // fetch program, ending in OpEnd
	// TypeName is the type text the user wrote after ':' without any array
	// suffix ("" if none), e.g. "b4@2/32".
	TypeName string
	// Dynamic reports a string argument (stored out of line via __data_loc).
	Dynamic bool
}

// FieldType returns the C type of the argument's field as the kernel
// registers it: the fetch type's name in the format file, with "[N]"
// appended for arrays ("u64", "s32", "__data_loc char[]", "u32[4]").
func (a *Arg) FieldType() string {
	if a.Count > 0 {
		return fmt.Sprintf("%s[%d]", a.Type.FmtType, a.Count)
	}
	return a.Type.FmtType
}

// FormatField returns the "field:" declaration the format file shows: the
// kernel prints an array field as "TYPE NAME[]" (probe fields carry no
// length) unless the type starts with "__data_loc", which is printed whole.
func (a *Arg) FormatField() string {
	ft := a.FieldType()
	if !strings.HasPrefix(ft, "__data_loc") {
		if i := strings.IndexByte(ft, '['); i >= 0 {
			return ft[:i] + " " + a.Name + "[]"
		}
	}
	return ft + " " + a.Name
}

// Signed reports the format file's "signed:" flag.
func (a *Arg) Signed() bool { return a.Type.IsSigned }

// PrintFmt returns the argument's part of the event's print format, e.g.
// "0x%Lx", "\\\"%s\\\"" or "{%u,%u}" for arrays.
func (a *Arg) PrintFmt() string {
	if a.Count == 0 {
		return a.Type.Fmt
	}
	var b strings.Builder
	b.WriteByte('{')
	for i := 0; i < a.Count; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(a.Type.Fmt)
	}
	b.WriteByte('}')
	return b.String()
}

// PrintArgs returns the argument's part of the print format's argument
// list, without the leading ", ": "REC->dfd", "__get_str(path)", and one
// entry per element for arrays.
func (a *Arg) PrintArgs() string {
	f := "REC->%s"
	if a.Type.IsString {
		f = "__get_str(%s)"
	}
	if a.Count == 0 {
		return fmt.Sprintf(f, a.Name)
	}
	parts := make([]string, a.Count)
	for i := range parts {
		parts[i] = fmt.Sprintf(f, fmt.Sprintf("%s[%d]", a.Name, i))
	}
	return strings.Join(parts, ", ")
}

// SameType reports whether b matches a for multi-probe events
// (trace_probe_compare_arg_type): same name, same fetch type, same array
// count.
func (a *Arg) SameType(b *Arg) bool {
	return a.Name == b.Name && a.Type == b.Type && a.Count == b.Count
}

// Text returns "name=body", the argument as it is read back.
func (a *Arg) Text() string { return a.Name + "=" + a.Body }

// EntryArgs returns the function arguments a return probe must save at
// entry for these arguments (the kernel's entry_arg table), in slot order:
// slot i holds argument EntryArgs()[i] at offset 8*i.
func EntryArgs(args []*Arg) []int {
	var out []int
	for _, a := range args {
		for _, o := range a.Ops {
			if o.Code != OpEData {
				continue
			}
			seen := false
			for _, n := range out {
				if n == int(o.Param) {
					seen = true
				}
			}
			if !seen {
				out = append(out, int(o.Param))
			}
		}
	}
	return out
}
