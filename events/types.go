package events

import (
	"fmt"
	"syscall"

	"github.com/ktrace-dev/ktrace/fetchargs"
	"github.com/ktrace-dev/ktrace/filter"
	"github.com/ktrace-dev/ktrace/synth"
)

// File is a probe-definition control file.
type File int

const (
	// KprobeEvents is kprobe_events: p/r lines only, scope kprobes.
	KprobeEvents File = iota
	// DynamicEvents is dynamic_events: every kind, scope all events.
	DynamicEvents
	// SyntheticEvents is synthetic_events: synthetic event definitions
	// only, scope synthetic events.
	SyntheticEvents
	// UprobeEvents is uprobe_events: uprobe lines only, scope uprobes.
	UprobeEvents
)

// FileNamed returns the control file of a name ("kprobe_events",
// "dynamic_events").
func FileNamed(name string) (File, bool) {
	switch name {
	case "kprobe_events":
		return KprobeEvents, true
	case "dynamic_events":
		return DynamicEvents, true
	case "synthetic_events":
		return SyntheticEvents, true
	case "uprobe_events":
		return UprobeEvents, true
	}
	return 0, false
}

func (f File) String() string {
	switch f {
	case KprobeEvents:
		return "kprobe_events"
	case DynamicEvents:
		return "dynamic_events"
	case SyntheticEvents:
		return "synthetic_events"
	case UprobeEvents:
		return "uprobe_events"
	}
	return fmt.Sprintf("File(%d)", int(f))
}

// LogEntry is the error_log record a failing command adds: subsystem
// ("trace_kprobe", "trace_fprobe", "event filter"), message, the command
// (argv joined by single spaces) and the caret column. It is ktrace's one
// type for an error_log entry: tracefs shows it, check prints it as JSON,
// the conformance goldens hold it.
type LogEntry struct {
	Subsys string `json:"subsys"`
	Msg    string `json:"msg"`
	Cmd    string `json:"cmd"`
	Pos    int    `json:"pos"`
}

// WriteError is a failed write(2) to a control file: the errno the write
// returns and the error_log entries the kernel appended while failing
// (none for failures it does not log, e.g. a line no probe type claims;
// more than one when it logs twice for one command, as 6.12's fprobe
// parser does for some bad arguments). It is ktrace's one type for a
// failed write, from the registry through tracefs to the CLI.
type WriteError struct {
	Errno syscall.Errno
	Logs  []LogEntry
}

// Last returns the entry the write logged last (the deciding one), or nil.
func (e *WriteError) Last() *LogEntry {
	if len(e.Logs) == 0 {
		return nil
	}
	return &e.Logs[len(e.Logs)-1]
}

func (e *WriteError) Error() string {
	if l := e.Last(); l != nil {
		return fmt.Sprintf("%s: error: %s (command %q, pos %d): %v", l.Subsys, l.Msg, l.Cmd, l.Pos, e.Errno)
	}
	return e.Errno.Error()
}

// Unwrap returns the errno, so errors.Is(err, syscall.EINVAL) works.
func (e *WriteError) Unwrap() error { return e.Errno }

// Kind is the probe kind of an event.
type Kind int

const (
	Kprobe    Kind = iota // p: kprobe
	Kretprobe             // r (or p ...%return): kretprobe
	Fentry                // f: fprobe on function entry
	Fexit                 // f ...%return (or with $retval): fprobe on function exit
	Tprobe                // t: fprobe on a tracepoint
	Synthetic             // s: a synthetic event (synthetic_events)
	Uprobe                // p PATH:OFFSET: uprobe
	Uretprobe             // r PATH:OFFSET (or %return): uretprobe
	Eprobe                // e: event probe on another event
)

func (k Kind) String() string {
	switch k {
	case Kprobe:
		return "kprobe"
	case Kretprobe:
		return "kretprobe"
	case Fentry:
		return "fentry"
	case Fexit:
		return "fexit"
	case Tprobe:
		return "tprobe"
	case Synthetic:
		return "synthetic"
	case Uprobe:
		return "uprobe"
	case Uretprobe:
		return "uretprobe"
	case Eprobe:
		return "eprobe"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// IsReturn reports whether events of this kind fire on function return.
func (k Kind) IsReturn() bool { return k == Kretprobe || k == Fexit || k == Uretprobe }

// IsUprobe reports whether events of this kind are uprobes (the events
// uprobe_events lists and truncates).
func (k Kind) IsUprobe() bool { return k == Uprobe || k == Uretprobe }

// isKprobe reports whether the kind belongs to the kprobe front end (the
// events kprobe_events lists and truncates).
func (k Kind) isKprobe() bool { return k == Kprobe || k == Kretprobe }

// Event is one trace event (events/GROUP/NAME). Several probes may share it
// (multi-probe events); they all have the same kind and argument types.
type Event struct {
	Group, Name string
	ID          int
	// Serial tells events apart over the registry's life: unlike the ID,
	// which a removed event hands down to the next one on 6.12, it is
	// never reused, so counters kept for an event die with it.
	Serial uint64
	Kind   Kind
	Probes []*Probe
	Args   []*fetchargs.Arg // the first probe's arguments (names and types are shared)
	// Synth is a synthetic event's definition (nil for probe events,
	// which have one probe per readback line; a synthetic event has one
	// pseudo-probe holding its readback line).
	Synth *synth.Event
	// Attached is the event an event probe reads (nil for other kinds).
	Attached *Attached
	Enabled  bool
	// Soft is soft mode: the event has triggers, or is the target of an
	// enable_event or disable_event trigger. The kernel's probe is then
	// registered as for an enabled event, which keeps it from removal.
	Soft bool
	// Generated marks a synthetic event that a hist trigger's action
	// generates: the kernel holds a reference to it, which keeps it from
	// removal.
	Generated bool
	Hits      uint64
	Misses    uint64
	// Filter is the event's filter (events/GROUP/EVENT/filter or record's
	// --filter), nil when none: the eBPF backend compiles it into the
	// event's programs.
	Filter *filter.Filter
}

// Probe is one probe point of an event, i.e. one line of the readback.
type Probe struct {
	Event     *Event
	Symbol    string // symbol as written without offset and suffix ("MOD:SYM" or "SYM"); "" for address probes
	Module    string // the MOD of "MOD:SYM"
	Offset    uint64 // offset from Symbol
	Addr      uint64 // probed address (after the kernel's adjustments); 0 when pending
	MaxActive int    // kretprobe/fexit maxactive as the readback shows it (0: not shown)
	Pending   bool   // accepted but not armed: module not loaded, unknown address or tracepoint
	Args      []*fetchargs.Arg
	Line      string // readback line, without the newline
	// Uprobe is a uprobe's place: the path as typed, the offsets and
	// the probed file's identity (nil for other kinds).
	Uprobe *UprobePlace
}

// UprobePlace is where a uprobe is: a file offset in the file at Path.
type UprobePlace struct {
	Path   string // as typed (relative paths and symlinks stay)
	Offset uint64
	RefCtr uint64 // reference counter offset, 0 for none
	File   FileID // the file the path resolved to
}

// isFprobe reports whether the kind belongs to the fprobe front end.
func (k Kind) isFprobe() bool { return k == Fentry || k == Fexit || k == Tprobe }

// Attached is the event an event probe is attached to: a tracepoint of the
// kernel model, or a dynamic event (Event set), which the event probe
// keeps busy.
type Attached struct {
	System, Name string
	Event        *Event // the dynamic event, nil for a tracepoint
	Filter       string // the "if" filter, tokens joined by single spaces ("" for none)
	// FilterProg is Filter parsed against the attached event's format,
	// what a tracer evaluates on each attached record (nil for none).
	FilterProg *filter.Filter
	// ID is the attached event's ID (its format's "ID:" line), the
	// common_type of its records.
	ID int
	// Fields are the attached event's own fields (not the common ones),
	// what the probe's $FIELD arguments index.
	Fields []fetchargs.EventField
}

// OnSynthetic reports whether the attached event is a synthetic event,
// which has no probe of its own: its records come from hist actions.
func (a *Attached) OnSynthetic() bool {
	return a != nil && a.Event != nil && a.Event.Kind == Synthetic
}
