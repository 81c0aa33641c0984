package kernel

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/ktrace-dev/ktrace/kernel/internal/blob"
)

// FtraceSystem is the system of the tracer's own events
// (events/ftrace/: print, function, kernel_stack, ...). They are not
// tracepoints: available_events does not list them, and they have no
// enable or filter file; only print, the trace_marker's event, takes
// triggers.
const FtraceSystem = "ftrace"

// FileFtraceEvents is the member of the embedded tracepoint blob that
// holds the ftrace events' formats.
const FileFtraceEvents = "ftrace"

// ftraceSet caches the model's ftrace events.
type ftraceSet struct {
	once sync.Once
	evs  []Tracepoint
	err  error
}

var ftraceSets sync.Map // *Model -> *ftraceSet

// FtraceEvents returns the tracer's own events (system FtraceSystem) with
// their formats, sorted by name: from the running kernel's
// events/ftrace/, a snapshot directory's tracepoints/events/ftrace/, or
// the embedded 6.12 formats. A model without them returns none.
func (m *Model) FtraceEvents() ([]Tracepoint, error) {
	v, _ := ftraceSets.LoadOrStore(m, &ftraceSet{})
	s := v.(*ftraceSet)
	s.once.Do(func() { s.evs, s.err = m.loadFtraceEvents() })
	return s.evs, s.err
}

func (m *Model) loadFtraceEvents() ([]Tracepoint, error) {
	switch m.source {
	case "embedded":
		a, err := blob.Parse(embeddedTracepoints)
		if err != nil {
			return nil, fmt.Errorf("embedded ftrace events: %w", err)
		}
		b, err := a.Read(FileFtraceEvents)
		if err != nil {
			return nil, fmt.Errorf("embedded ftrace events: %w", err)
		}
		return decodeTracepoints(b)
	case "host":
		dir := tracingDir()
		if dir == "" {
			return nil, nil
		}
		return ReadFtraceEvents(filepath.Join(dir, "events"))
	}
	return ReadFtraceEvents(filepath.Join(m.source, FileTracepoints, "events"))
}

// ReadFtraceEvents reads EVENTS/ftrace/*/format (EVENTS being a tracefs
// events/ directory or its copy in a snapshot); none when it is missing.
func ReadFtraceEvents(events string) ([]Tracepoint, error) {
	formats, err := filepath.Glob(filepath.Join(events, FtraceSystem, "*", "format"))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", events, err)
	}
	var out []Tracepoint
	for _, p := range formats {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("ftrace event: %w", err)
		}
		out = append(out, Tracepoint{System: FtraceSystem, Name: filepath.Base(filepath.Dir(p)), Format: string(b), Seq: -1})
	}
	sortTracepoints(out)
	return out, nil
}
