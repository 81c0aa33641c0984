package tracefs

import (
	"github.com/ktrace-dev/ktrace/events"
)

// ControlFile names one of the probe-definition control files
// (events.File: kprobe_events, dynamic_events). The files share one set of
// events but differ in scope: kprobe_events shows and truncates only
// kprobes, dynamic_events every kind of dynamic event.
type ControlFile = events.File

// The control files.
const (
	KprobeEvents  = events.KprobeEvents
	DynamicEvents = events.DynamicEvents
	// SyntheticEvents is synthetic_events.
	SyntheticEvents = events.SyntheticEvents
	// UprobeEvents is uprobe_events.
	UprobeEvents = events.UprobeEvents
)

// LogEntry is one error_log record (events.LogEntry: subsystem, message,
// command and caret column).
type LogEntry = events.LogEntry

// WriteError is a failed write(2) to a control file with the error_log
// records the kernel appended while failing (events.WriteError).
type WriteError = events.WriteError

// EventInfo is the view tracefs needs of one dynamic event.
type EventInfo struct {
	Group, Name string
	ID          int
	Serial      uint64 // never reused, unlike ID (events.Event.Serial)
	Enabled     bool
	// Kprobe is true for kprobes and kretprobes: they are the events listed
	// in kprobe_profile.
	Kprobe bool
	// Probes is the number of probe points sharing the event (multi-probe
	// events). kprobe_profile has one line per probe point.
	Probes       int
	Hits, Misses uint64
	// UprobePaths holds, for uprobes and uretprobes, the path of each
	// probe point as typed: uprobe_profile has one line per probe point.
	UprobePaths []string
	// Order holds the place of each of the event's probe points in the
	// list of all probe points, which kprobe_profile and uprobe_profile
	// follow (nil: the event's points come together, in event order).
	Order []int
	// Static marks one of the kernel's built-in events (StaticEvent),
	// which the FS keeps itself; backends never report one.
	Static bool
	// Internal marks one of the tracer's own events (StaticEvent.Internal).
	Internal bool
	// Synthetic marks a synthetic event.
	Synthetic bool
}

// Backend is the model of the probe events behind the control files. ktrace
// implements it with the events package (see NewRegistryBackend); tests may
// implement it directly.
//
// Errors from Write, Truncate and SetEnabled carry a syscall.Errno, either
// directly or through Unwrap; Write's errors should be *WriteError so the
// error_log records reach tracefs.
type Backend interface {
	// Write is one write(2) to the control file.
	Write(f ControlFile, data []byte) (int, error)
	// Truncate is an O_TRUNC open of the control file: remove every event
	// in its scope, or fail with EBUSY and remove nothing.
	Truncate(f ControlFile) error
	// Readback is the control file's content.
	Readback(f ControlFile) string
	// Events lists the events in creation order.
	Events() []EventInfo
	// Format is the events/GROUP/EVENT/format text; ok is false when there
	// is no such event.
	Format(group, name string) (text string, ok bool)
	// SetEnabled enables or disables one event.
	SetEnabled(group, name string, on bool) error
}

// Syncer is implemented by backends whose records reach the FS (Record)
// some time after the hit. Sync returns once everything recorded so far
// has been passed on; the FS calls it before showing trace or consuming
// trace_pipe, so that they hold every hit that happened before the read,
// in time order, as the kernel's do.
type Syncer interface {
	Sync()
}
