package record

import (
	"errors"
	"fmt"
	"io"

	"github.com/ktrace-dev/ktrace/check"
	"github.com/ktrace-dev/ktrace/events"
	"github.com/ktrace-dev/ktrace/grammar"
)

// ErrNothing is Select's error when there is no event to record.
var ErrNothing = errors.New("nothing to record: give probe LINEs or enable session events (ktrace enable)")

// DefineError is a line the registry rejected; it wraps the registry's
// error (an *events.WriteError, with its error_log entries).
type DefineError struct {
	Line string
	Err  error
}

func (e *DefineError) Error() string {
	return fmt.Sprintf("%q: %s", e.Line, grammar.Strerror(grammar.ErrnoOf(e.Err)))
}

func (e *DefineError) Unwrap() error { return e.Err }

// WriteLog writes the error_log entries of the rejected write on w, as
// record prints them: a "ktrace: SUBSYS: error: MSG" line and its command
// each.
func (e *DefineError) WriteLog(w io.Writer) {
	var we *events.WriteError
	if errors.As(e.Err, &we) {
		for _, l := range we.Logs {
			fmt.Fprintf(w, "ktrace: %s: error: %s\n  Command: %s\n", l.Subsys, l.Msg, l.Cmd)
		}
	}
}

// Select defines lines in reg, each written to its default control file,
// and returns the events to record: reg's enabled events and the lines'
// events (a new event, or the event a line adds a probe to), in reg's
// order, and those of them the lines name (what --filter applies to).
// defined, when set, is called after each line is defined.
func Select(reg *events.Registry, lines []string, defined func(line string)) (evs, named []*events.Event, err error) {
	// Events are identified by GROUP/NAME: the registry hands out
	// snapshots, not the live events.
	key := func(ev *events.Event) string { return ev.Group + "/" + ev.Name }
	want, fromLines := map[string]bool{}, map[string]bool{}
	for _, ev := range reg.Events() {
		if ev.Enabled {
			want[key(ev)] = true
		}
	}
	for _, line := range lines {
		ev, err := reg.Define(check.DefaultFile(line), line)
		if err != nil {
			return nil, nil, &DefineError{Line: line, Err: err}
		}
		if ev != nil {
			want[key(ev)], fromLines[key(ev)] = true, true
		}
		if defined != nil {
			defined(line)
		}
	}
	for _, ev := range reg.Events() {
		if want[key(ev)] {
			evs = append(evs, ev)
		}
		if fromLines[key(ev)] {
			named = append(named, ev)
		}
	}
	if len(evs) == 0 {
		return nil, nil, ErrNothing
	}
	return evs, named, nil
}
