package synth

import (
	"fmt"
	"strings"
	"syscall"

	"github.com/ktrace-dev/ktrace/grammar"
)

// Limits of the kernel's synthetic events.
const (
	// MaxFields is SYNTH_FIELDS_MAX.
	MaxFields = 64
	// StrVarLenMax is STR_VAR_LEN_MAX: the longest static string, and the
	// record space a static string field takes.
	StrVarLenMax = 256
	// System is the group of every synthetic event.
	System = "synthetic"
)

// Field is one field of a synthetic event.
type Field struct {
	Name string
	// Type is the type as the kernel stores it: "u64", "unsigned int",
	// "char[16]", or with a "__data_loc " prefix for dynamic strings and
	// stacks ("__data_loc char[]", "__data_loc long[]").
	Type    string
	Size    int // the format's size: the type's, a static string's length, 8 for dynamic fields
	Signed  bool
	String  bool // a char[...] field
	Dynamic bool // a dynamic string or a stack
	Stack   bool // a long[...] field
}

// Event is a synthetic event definition.
type Event struct {
	Name   string
	Fields []Field
}

// Error is a rejected synthetic-event command: the code logged (SynthNone
// when the kernel logs nothing), the caret in the logged command, and the
// errno of the write.
type Error struct {
	Code  grammar.SynthCode
	Pos   int
	Cmd   string // the logged command
	Errno syscall.Errno
}

func (e *Error) Error() string {
	if e.Code == grammar.SynthNone {
		return e.Errno.Error()
	}
	return fmt.Sprintf("%s: %s (pos %d): %v", e.Code.Name(), e.Code.Message(), e.Pos, e.Errno)
}

// Command is a parsed command: a definition, or the removal of a name.
type Command struct {
	Delete bool
	Name   string
	Event  *Event // the definition (nil for a removal)
}

// Exists tells whether a synthetic event of a name is defined.
type Exists func(name string) bool

// isSpace is the blank set synthetic commands split on (strpbrk " \t" for
// the name; argv_split's isspace for the fields).
func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'
}

func skipSpaces(s string) string {
	i := 0
	for i < len(s) && isSpace(s[i]) {
		i++
	}
	return s[i:]
}

// fields splits s on C whitespace, as argv_split does.
func fields(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r < 0x80 && isSpace(byte(r)) })
}

// errpos is the kernel's err_pos: where str first occurs in the command
// (0 when it does not).
func errpos(cmd, str string) int {
	if i := strings.Index(cmd, str); i >= 0 {
		return i
	}
	return 0
}

// firstSegmentShort is the kernel's check_command: a command whose first
// ';' segment has fewer than three words (name, type, field) is malformed,
// unless it is a removal.
func firstSegmentShort(cmd string) bool {
	seg, _, _ := strings.Cut(cmd, ";")
	if strings.HasPrefix(seg, "!") {
		return false
	}
	return len(fields(seg)) < 3
}

// ParseSyntheticEvents parses a line written to synthetic_events (its
// comment already stripped): "NAME FIELDS" defines, "!NAME ..." removes.
// A blank line is a zero Command with ok false.
func ParseSyntheticEvents(line string, exists Exists) (cmd Command, ok bool, err *Error) {
	raw := skipSpaces(line)
	if raw == "" {
		return Command{}, false, nil
	}
	if firstSegmentShort(raw) {
		return Command{}, false, fail(raw, grammar.SynthInvalidCmd, 0)
	}
	p := strings.IndexAny(raw, " \t")
	if p < 0 && raw[0] != '!' {
		return Command{}, false, fail(raw, grammar.SynthInvalidCmd, 0)
	}
	name := raw
	if p >= 0 {
		name = raw[:p]
	}
	if name[0] == '!' {
		return Command{Delete: true, Name: name[1:]}, true, nil
	}
	ev, err := define(raw, name, skipSpaces(raw[p:]), exists)
	if err != nil {
		return Command{}, false, err
	}
	return Command{Name: name, Event: ev}, true, nil
}

// ParseDynamic parses an "s:[synthetic/]NAME FIELDS" line written to
// dynamic_events (its comment already stripped). mine is false for a line
// that is not a synthetic-event definition (another front end's).
func ParseDynamic(line string, exists Exists) (cmd Command, mine bool, err *Error) {
	raw := skipSpaces(line)
	if len(raw) < 2 || raw[0] != 's' || raw[1] != ':' {
		return Command{}, false, nil
	}
	name := raw[2:]
	p := strings.IndexAny(raw, " \t")
	if p < 0 {
		return Command{}, true, fail(raw, grammar.SynthInvalidCmd, 0)
	}
	fieldText := skipSpaces(raw[p:])
	// A '/' anywhere after "s:" must be the synthetic group's.
	if strings.IndexByte(name, '/') >= 0 {
		if !strings.HasPrefix(name, System+"/") {
			return Command{}, true, fail(raw, grammar.SynthInvalidDynCmd, 0)
		}
		name = name[len(System)+1:]
	}
	start := len(raw) - len(name)
	if firstSegmentShort(raw[start:]) {
		return Command{}, true, fail(raw, grammar.SynthInvalidCmd, 0)
	}
	ev, err := define(raw, raw[start:p], fieldText, exists)
	if err != nil {
		return Command{}, true, err
	}
	return Command{Name: ev.Name, Event: ev}, true, nil
}

func fail(cmd string, c grammar.SynthCode, pos int) *Error {
	errno := syscall.EINVAL
	if c == grammar.SynthEventExists {
		errno = syscall.EEXIST
	}
	return &Error{Code: c, Pos: pos, Cmd: cmd, Errno: errno}
}

// define is the kernel's __create_synth_event: the name, then each field of
// each ';' segment.
func define(cmd, name, fieldText string, exists Exists) (*Event, *Error) {
	if name == "" {
		return nil, fail(cmd, grammar.SynthInvalidCmd, 0)
	}
	if !goodName(name) {
		return nil, fail(cmd, grammar.SynthBadName, errpos(cmd, name))
	}
	if exists != nil && exists(name) {
		return nil, fail(cmd, grammar.SynthEventExists, errpos(cmd, name))
	}
	ev := &Event{Name: name}
	for _, seg := range strings.Split(fieldText, ";") {
		argv := fields(seg)
		for len(argv) > 0 {
			f, used, err := parseField(cmd, argv)
			if err != nil {
				return nil, err
			}
			if len(ev.Fields) == MaxFields {
				return nil, fail(cmd, grammar.SynthTooManyFields, 0)
			}
			ev.Fields = append(ev.Fields, f)
			argv = argv[used:]
		}
	}
	if len(ev.Fields) == 0 {
		return nil, fail(cmd, grammar.SynthInvalidCmd, 0)
	}
	return ev, nil
}

// parseField is the kernel's parse_synth_field: "[unsigned] TYPE NAME",
// with an array suffix on the name or the type.
func parseField(cmd string, argv []string) (Field, int, *Error) {
	prefix, typ := "", argv[0]
	var name string
	used := 2
	if typ == "unsigned" {
		if len(argv) < 3 {
			return Field{}, 0, fail(cmd, grammar.SynthIncompleteType, errpos(cmd, typ))
		}
		prefix, typ, name, used = "unsigned ", argv[1], argv[2], 3
	} else if len(argv) >= 2 {
		name = argv[1]
	} else {
		return Field{}, 0, fail(cmd, grammar.SynthInvalidField, errpos(cmd, typ))
	}
	fname, array, hasArray := name, "", false
	if i := strings.IndexByte(name, '['); i >= 0 {
		fname, array, hasArray = name[:i], name[i:], true
	}
	if !goodName(fname) {
		return Field{}, 0, fail(cmd, grammar.SynthBadName, errpos(cmd, name))
	}
	f := Field{Name: fname, Type: prefix + typ + array}
	size, ok := fieldSize(f.Type)
	switch {
	case !ok && hasArray:
		return Field{}, 0, fail(cmd, grammar.SynthInvalidArraySpec, errpos(cmd, name))
	case !ok:
		return Field{}, 0, fail(cmd, grammar.SynthInvalidType, errpos(cmd, typ))
	case size == 0:
		if !isString(f.Type) && !isStack(f.Type) {
			return Field{}, 0, fail(cmd, grammar.SynthInvalidType, errpos(cmd, typ))
		}
		f.Type = "__data_loc " + f.Type
		f.Dynamic = true
		size = 8
	}
	f.Size = size
	f.String = isString(f.Type)
	f.Stack = !f.String && isStack(f.Type)
	f.Signed = !strings.HasPrefix(f.Type, "u") && f.Type != "gfp_t"
	return f, used, nil
}

// goodName is the kernel's is_good_name: a C identifier.
func goodName(s string) bool {
	if s == "" || !(isAlpha(s[0]) || s[0] == '_') {
		return false
	}
	for i := 1; i < len(s); i++ {
		if !(isAlpha(s[i]) || (s[i] >= '0' && s[i] <= '9') || s[i] == '_') {
			return false
		}
	}
	return true
}

func isAlpha(c byte) bool { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') }

func isString(t string) bool { return strings.Contains(t, "char[") }
func isStack(t string) bool  { return strings.Contains(t, "long[") }

// numericTypes are the scalar types with their size and print format.
var numericTypes = map[string]struct {
	size int
	fmt  string
}{
	"s64": {8, "%lld"}, "u64": {8, "%llu"},
	"s32": {4, "%d"}, "u32": {4, "%u"},
	"s16": {2, "%d"}, "u16": {2, "%u"},
	"s8": {1, "%d"}, "u8": {1, "%u"},
	"char": {1, "%d"}, "unsigned char": {1, "%u"},
	"int": {4, "%d"}, "unsigned int": {4, "%u"},
	"long": {8, "%ld"}, "unsigned long": {8, "%lu"},
	"bool": {1, "%d"}, "pid_t": {4, "%d"}, "gfp_t": {4, "%x"},
}

// fieldSize is the kernel's synth_field_size: a scalar's size, a static
// string's length, 0 for a dynamic string or a stack (and for anything it
// does not know); ok is false for a malformed string length.
func fieldSize(t string) (size int, ok bool) {
	if n, found := numericTypes[t]; found {
		return n.size, true
	}
	if isString(t) {
		return stringSize(t)
	}
	return 0, true
}

// stringSize is synth_field_string_size: the text between "char[" and
// the first ']' (which must end the type) is at most three characters, a
// number in base 0 of at most StrVarLenMax; empty or 0 means dynamic.
func stringSize(t string) (int, bool) {
	start := strings.Index(t, "char[") + len("char[")
	end := strings.IndexByte(t, ']')
	if end < start || end != len(t)-1 {
		return 0, false
	}
	n := t[start:end]
	if len(n) > 3 {
		return 0, false
	}
	if n == "" {
		return 0, true
	}
	v, err := grammar.ParseUint32(n, 0)
	if err != nil || v > StrVarLenMax {
		return 0, false
	}
	return int(v), true
}

// Readback is the event's line in synthetic_events: the name, a tab, and
// "TYPE NAME" per field joined by "; " (dynamic types without their
// __data_loc prefix). dynamic_events shows it after "s:synthetic/".
func (e *Event) Readback() string {
	var b strings.Builder
	b.WriteString(e.Name)
	b.WriteByte('\t')
	for i, f := range e.Fields {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(strings.TrimPrefix(f.Type, "__data_loc "))
		b.WriteByte(' ')
		b.WriteString(f.Name)
	}
	return b.String()
}

// FormatFields writes the event's field lines of its format file, after
// the common fields: every field takes an 8-byte slot from offset 8, a
// static string StrVarLenMax bytes; a static string's type prints as
// "char NAME[]".
func (e *Event) FormatFields(b *strings.Builder) {
	off := 8
	for _, f := range e.Fields {
		typ, name := f.Type, f.Name
		if f.String && !f.Dynamic {
			typ, name = typ[:strings.IndexByte(typ, '[')], name+"[]"
		}
		signed := 0
		if f.Signed {
			signed = 1
		}
		fmt.Fprintf(b, "\tfield:%s %s;\toffset:%d;\tsize:%d;\tsigned:%d;\n", typ, name, off, f.Size, signed)
		if f.String && !f.Dynamic {
			off += StrVarLenMax
		} else {
			off += 8
		}
	}
}

// PrintFmt is the event's print fmt: "NAME=FMT" per field joined by ", ",
// then REC->NAME per field (__get_str for dynamic strings,
// __get_stacktrace for stacks).
func (e *Event) PrintFmt() string {
	var b strings.Builder
	b.WriteByte('"')
	for i, f := range e.Fields {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(f.Name)
		b.WriteByte('=')
		b.WriteString(f.PrintFormat())
	}
	b.WriteByte('"')
	for _, f := range e.Fields {
		switch {
		case f.String && f.Dynamic:
			fmt.Fprintf(&b, ", __get_str(%s)", f.Name)
		case f.Stack:
			fmt.Fprintf(&b, ", __get_stacktrace(%s)", f.Name)
		default:
			fmt.Fprintf(&b, ", REC->%s", f.Name)
		}
	}
	return b.String()
}

// PrintFormat is the field's printf format in the print fmt.
func (f *Field) PrintFormat() string {
	if f.String || f.Stack {
		return "%s"
	}
	if n, ok := numericTypes[f.Type]; ok {
		return n.fmt
	}
	return "%llu"
}
