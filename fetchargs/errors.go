package fetchargs

import (
	"errors"
	"fmt"
	"strings"
	"syscall"

	"github.com/ktrace-dev/ktrace/grammar"
)

// UnpredictableOffset is the Off of an error whose caret the kernel takes
// from a stale parse position: after the last member of a BTF member chain
// ("file->f_flags:string") Linux computes the offset from a NULL pointer
// difference, so the caret lands at an address-dependent column. ktrace
// reports the code and errno exactly and marks the caret with this value.
const UnpredictableOffset = -1

// garbageOffset is the internal parse position that stands for the
// kernel's stale offset; any caret derived from it is unpredictable.
const garbageOffset = -1 << 30

// LogError is returned when one rejected argument list writes more than one
// error_log entry (Linux logs, carries on, and logs again: an fprobe's
// %REG logs BAD_VAR and then BAD_FETCH_ARG; a $arg* without BTF logs
// NOSUP_BTFARG and later BAD_VAR). Entries are in log order. Unwrap gives
// the last entry carrying the errno of the failed write, so errors.As to a
// *grammar.Error still finds the deciding entry.
type LogError struct {
	Entries []*grammar.Error
	Errno   syscall.Errno
}

func (e *LogError) Error() string {
	s := make([]string, len(e.Entries))
	for i, x := range e.Entries {
		s[i] = x.Error()
	}
	return fmt.Sprintf("%s (%d error_log entries, errno %s)", strings.Join(s, "; "), len(e.Entries), grammar.ErrnoName(e.Errno))
}

// Unwrap returns the last log entry, with the write's errno.
func (e *LogError) Unwrap() error {
	if len(e.Entries) == 0 {
		return &grammar.Error{Errno: e.Errno}
	}
	last := *e.Entries[len(e.Entries)-1]
	last.Errno = e.Errno
	return &last
}

// Is lets errors.Is(err, syscall.EINVAL) match the write's errno.
func (e *LogError) Is(target error) bool {
	var n syscall.Errno
	return errors.As(target, &n) && n == e.Errno
}

// Logs returns the error_log entries an error from this package wrote, in
// order, and the errno of the failed write. A *grammar.Error with Code
// grammar.ErrNone stands for a failure that logs nothing.
func Logs(err error) ([]*grammar.Error, syscall.Errno) {
	var le *LogError
	if errors.As(err, &le) {
		return le.Entries, le.Errno
	}
	var ge *grammar.Error
	if errors.As(err, &ge) {
		if ge.Code == grammar.ErrNone {
			return nil, ge.Errno
		}
		return []*grammar.Error{ge}, ge.Errno
	}
	return nil, 0
}

// logger collects the error_log entries of one parse step, attributing
// them to the current argv index.
type logger struct {
	index   int
	entries []*grammar.Error
}

func (l *logger) log(off int, c grammar.Code) {
	if off <= garbageOffset/2 {
		off = UnpredictableOffset
	}
	l.entries = append(l.entries, &grammar.Error{Code: c, Arg: l.index, Off: off, Errno: syscall.EINVAL})
}

// result turns the collected entries (after any pending ones) into the
// returned error for a write failing with errno.
func result(pending, entries []*grammar.Error, index int, errno syscall.Errno) error {
	all := make([]*grammar.Error, 0, len(pending)+len(entries))
	all = append(all, pending...)
	all = append(all, entries...)
	switch len(all) {
	case 0:
		return &grammar.Error{Code: grammar.ErrNone, Arg: index, Errno: errno}
	case 1:
		e := *all[0]
		e.Errno = errno
		return &e
	}
	return &LogError{Entries: all, Errno: errno}
}
