package tracefs

import (
	"fmt"
	"strings"
	"time"
)

// errorLogMax is how many entries error_log keeps; older ones are dropped.
const errorLogMax = 8

// commandPrefix precedes the command in an error_log entry; the caret line
// is indented by its length plus the caret position.
const commandPrefix = "  Command: "

type logRecord struct {
	at time.Duration
	LogEntry
}

// logErrors appends entries to error_log, keeping the newest errorLogMax.
func (f *FS) logErrors(es []LogEntry) {
	if len(es) == 0 {
		return
	}
	at := f.clock()
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, e := range es {
		f.errlog = append(f.errlog, logRecord{at: at, LogEntry: e})
	}
	f.logged += uint64(len(es))
	if n := len(f.errlog); n > errorLogMax {
		f.errlog = append([]logRecord(nil), f.errlog[n-errorLogMax:]...)
	}
}

// ClearErrorLog empties error_log, as a truncating open of it does.
func (f *FS) ClearErrorLog() {
	f.mu.Lock()
	f.errlog = nil
	f.mu.Unlock()
}

// ErrorLogCount is the number of entries ever added to error_log (kept
// or dropped); comparing it before and after a write tells how many
// entries the write added.
func (f *FS) ErrorLogCount() uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.logged
}

// ErrorLog returns the entries currently in error_log, oldest first.
func (f *FS) ErrorLog() []LogEntry {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]LogEntry, len(f.errlog))
	for i, r := range f.errlog {
		out[i] = r.LogEntry
	}
	return out
}

// FormatLogEntry renders one error_log entry without its timestamp: the
// "subsys: error: msg" line, the command line and the caret line. ktrace's
// CLI prints rejected lines in this form.
func FormatLogEntry(e LogEntry) string {
	pos := e.Pos
	if pos < 0 {
		pos = 0
	}
	return fmt.Sprintf("%s: error: %s\n%s%s\n%s^\n", e.Subsys, e.Msg, commandPrefix, e.Cmd,
		strings.Repeat(" ", len(commandPrefix)+pos))
}

func (f *FS) errorLogText() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var b strings.Builder
	for _, r := range f.errlog {
		sec := int64(r.at / time.Second)
		usec := int64(r.at%time.Second) / int64(time.Microsecond)
		fmt.Fprintf(&b, "[%5d.%06d] %s", sec, usec, FormatLogEntry(r.LogEntry))
	}
	return b.String()
}
