package tracefs

import (
	"fmt"
	"strconv"
	"strings"
)

// Event filter checking. ktrace has no filter engine; it checks what makes
// the kernel reject the commonest mistakes in a filter written to
// events/GROUP/EVENT/filter, with the kernel's messages and carets (seen on
// 6.1.192 and 6.12.95):
//
//   - an unknown field name: "Field not found", caret one past the name;
//   - a field not followed by a comparison: "Invalid operator", caret where
//     the operator should be;
//   - a missing value, or a non-number compared with a numeric field:
//     "Invalid value (did you forget quotes)?", caret at the end of the
//     value.
//
// Anything else is accepted as written (e.g. 6.1 also rejects a trailing
// "&&", which is not checked here).

// filterSubsys is the error_log subsystem of filter errors.
const filterSubsys = "event filter parse error"

const (
	msgFieldNotFound = "Field not found"
	msgInvalidOp     = "Invalid operator"
	msgInvalidValue  = "Invalid value (did you forget quotes)?"
)

// Field is one field of an event as filters see it.
type Field struct {
	Name   string
	String bool // a string field (compared with quoted strings or globs)
}

// genericFields are the fields every event has: the common header, and the
// cpu/comm pseudo fields.
var genericFields = []Field{
	{"common_type", false}, {"common_flags", false}, {"common_preempt_count", false},
	{"common_pid", false}, {"cpu", false}, {"CPU", false}, {"common_cpu", false},
	{"comm", true}, {"COMM", true}, {"common_comm", true},
}

type filterError struct {
	msg string
	pos int
}

func isFieldByte(c byte) bool {
	return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

func isBlank(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'
}

func lookupField(fields []Field, name string) (Field, bool) {
	for _, f := range genericFields {
		if f.Name == name {
			return f, true
		}
	}
	for _, f := range fields {
		if f.Name == name {
			return f, true
		}
	}
	return Field{}, false
}

// checkFilter returns the first error the kernel would report for expr on
// an event with the given fields, or nil.
func checkFilter(expr string, fields []Field) *filterError {
	s := expr
	i := 0
	skip := func() {
		for i < len(s) && isBlank(s[i]) {
			i++
		}
	}
	for {
		skip()
		if i >= len(s) {
			return nil
		}
		switch {
		case s[i] == '(' || s[i] == ')' || s[i] == '!':
			i++
			continue
		case strings.HasPrefix(s[i:], "&&") || strings.HasPrefix(s[i:], "||"):
			i += 2
			continue
		case !isFieldByte(s[i]):
			// Not a predicate ktrace understands; accept the rest.
			return nil
		}
		start := i
		for i < len(s) && isFieldByte(s[i]) {
			i++
		}
		name, end := s[start:i], i
		f, ok := lookupField(fields, name)
		if !ok {
			return &filterError{msgFieldNotFound, end + 1}
		}
		skip()
		op := ""
		for _, o := range []string{"==", "!=", "<=", ">=", "<", ">", "&", "~"} {
			if strings.HasPrefix(s[i:], o) {
				op = o
				break
			}
		}
		if op == "" {
			return &filterError{msgInvalidOp, i}
		}
		i += len(op)
		skip()
		if i < len(s) && (s[i] == '"' || s[i] == '\'') {
			q := s[i]
			j := strings.IndexByte(s[i+1:], q)
			if j < 0 {
				return nil
			}
			i += j + 2
			continue
		}
		vstart := i
		for i < len(s) && !isBlank(s[i]) && s[i] != ')' && s[i] != '&' && s[i] != '|' {
			i++
		}
		val := s[vstart:i]
		if val == "" {
			return &filterError{msgInvalidValue, i}
		}
		if !f.String && !isNumber(val) {
			return &filterError{msgInvalidValue, i}
		}
	}
}

// isNumber reports whether v parses as kstrtoll/kstrtoull with base 0
// would take it.
func isNumber(v string) bool {
	if _, err := strconv.ParseInt(v, 0, 64); err == nil {
		return true
	}
	_, err := strconv.ParseUint(v, 0, 64)
	return err == nil
}

// filterErrorText is what the event's filter file shows after a rejected
// filter: the filter, a caret line and the message.
func filterErrorText(expr string, e *filterError) string {
	return fmt.Sprintf("%s\n%s^\nparse_error: %s\n\n", expr, strings.Repeat(" ", e.pos), e.msg)
}
