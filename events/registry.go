package events

import (
	"strings"
	"sync"
	"syscall"

	"github.com/ktrace-dev/ktrace/grammar"
	"github.com/ktrace-dev/ktrace/kernel"
)

// writeBufSize is the kernel's WRITE_BUFSIZE for control-file writes: data
// is consumed in chunks of at most writeBufSize-1 bytes, and a line must fit
// in one chunk with its newline (so at most writeBufSize-2 bytes).
const writeBufSize = 4096

// Registry is the set of dynamic events of one emulated kernel. It is safe
// for concurrent use; every method runs under one lock, as the kernel runs
// every command under event_mutex.
//
// The registry NewRegistry returns is the top-level tracing directory's
// view of the events; Instance returns the view of a tracing instance
// (instances/NAME), which shares the definitions and keeps its own enable
// state, soft mode and filters (instance.go).
type Registry struct {
	*core
	// view is an instance's state of the events; nil for the top level,
	// whose state the events hold themselves.
	view *view
}

// core is what every view of a registry shares.
type core struct {
	mu      sync.Mutex
	model   *kernel.Model
	dialect *grammar.Dialect
	probes  []*Probe // every probe, in creation order: the readback order
	events  []*Event // every event, in creation order
	idUsed  []bool   // idUsed[i]: event ID firstID+i is allocated
	firstID int
	serial  uint64 // the last Event.Serial handed out
	// defined is the event the running command created or added a probe
	// to (Define reports it).
	defined *Event
	// tpStubs holds the tracepoints whose probe stub is registered on
	// them: by a live t probe, or left behind by a t probe whose
	// registration failed after that step, as 6.12 leaves it (every later
	// t probe on that tracepoint then fails with EEXIST, without a log).
	tpStubs map[string]bool
	// lookupPath resolves uprobe paths (nil: HostPathLookup).
	lookupPath PathLookup
	// views are the open instances' views (Instance).
	views map[*view]bool
}

// NewRegistry returns an empty registry for kernel m speaking dialect d. A
// nil d selects the dialect of m's release.
func NewRegistry(m *kernel.Model, d *grammar.Dialect) *Registry {
	if d == nil {
		major, minor, _ := m.KernelVersion()
		d = grammar.DialectFor(major, minor)
	}
	// IDs of removed events are reused, lowest first, like the kernel's
	// trace_search_list (except where the dialect says IDs only grow).
	return &Registry{core: &core{model: m, dialect: d, firstID: d.FirstEventID, views: map[*view]bool{}}}
}

// Dialect returns the registry's kernel dialect.
func (r *Registry) Dialect() *grammar.Dialect { return r.dialect }

// Model returns the registry's kernel model.
func (r *Registry) Model() *kernel.Model { return r.model }

// Write is one write(2) of data to control file f. Like the kernel's
// trace_parse_run_command it splits the data into lines, strips '#'
// comments, runs the lines in order and stops at the first failing one;
// lines before it stay applied. A line longer than 4094 bytes, or a NUL
// byte before the end of a line, fails the write with EINVAL and nothing in
// error_log. On success it returns len(data).
func (r *Registry) Write(f File, data []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.writeLocked(f, data)
}

func (r *Registry) writeLocked(f File, data []byte) (int, error) {
	count := len(data)
	done := 0
	for done < count {
		size := count - done
		if size >= writeBufSize {
			size = writeBufSize - 1
		}
		chunk := data[done : done+size]
		// The kernel NUL-terminates the chunk and works with C strings,
		// so a NUL byte ends the visible text.
		if i := indexNUL(chunk); i >= 0 {
			chunk = chunk[:i]
		}
		pos := 0
		for done < count {
			rest := chunk[pos:]
			var line []byte
			if i := indexNL(rest); i >= 0 {
				line = rest[:i]
				size = i + 1
			} else {
				size = len(rest)
				if done+size < count {
					if pos != 0 {
						break // re-read the rest as a new chunk
					}
					return 0, &WriteError{Errno: syscall.EINVAL}
				}
				line = rest
			}
			done += size
			if err := r.execLocked(f, string(line)); err != nil {
				return 0, err
			}
			pos += size
		}
	}
	return count, nil
}

func indexNUL(b []byte) int {
	for i, c := range b {
		if c == 0 {
			return i
		}
	}
	return -1
}

func indexNL(b []byte) int {
	for i, c := range b {
		if c == '\n' {
			return i
		}
	}
	return -1
}

// Exec runs one command line on control file f: a probe definition, a
// removal ("-:..."; in dynamic_events also "!...") or a blank line. Text
// from the first '#' on is a comment.
func (r *Registry) Exec(f File, line string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.execLocked(f, line)
}

// Define writes one line to control file f, as `echo LINE >> FILE` does
// (one write(2) of LINE and a newline), and returns a snapshot of the
// event the line created or added a probe to: nil for a removal, a
// comment or a blank line, and on error.
func (r *Registry) Define(f File, line string) (*Event, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.defined = nil
	if _, err := r.writeLocked(f, []byte(line+"\n")); err != nil {
		return nil, err
	}
	if r.defined == nil {
		return nil, nil
	}
	return r.defined.snapshot(), nil
}

func (r *Registry) execLocked(f File, line string) error {
	line = grammar.StripComment(line)
	if f == SyntheticEvents {
		return r.execSynthetic(line)
	}
	if len(line) > 0 && (line[0] == '-' || (f == DynamicEvents && line[0] == '!')) {
		if err := r.release(line, scopeOf(f)); err != 0 {
			return &WriteError{Errno: err}
		}
		return nil
	}
	argv := grammar.Split(line)
	if len(argv) == 0 {
		return nil
	}
	if f == UprobeEvents {
		if res := r.createUprobe(argv); !res.cancel {
			return res.err
		}
		return &WriteError{Errno: syscall.EINVAL}
	}
	res := r.createKprobe(argv)
	if res.cancel && f == DynamicEvents && r.dialect.Fprobe {
		res = r.createFprobe(argv)
	}
	if res.cancel && f == DynamicEvents {
		res = r.createSynthetic(line)
	}
	if res.cancel && f == DynamicEvents {
		res = r.createEprobe(argv)
	}
	// The uprobe front end registers last (fs_initcall): it sees only
	// what every other one declined.
	if res.cancel && f == DynamicEvents {
		res = r.createUprobe(argv)
	}
	if res.cancel {
		return &WriteError{Errno: syscall.EINVAL}
	}
	return res.err
}

// Readback returns the content of control file f: one line per probe, in
// creation order; kprobe_events shows only kprobes and kretprobes.
func (r *Registry) Readback(f File) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var b strings.Builder
	for _, p := range r.probes {
		line := p.Line
		switch {
		case f == KprobeEvents && !p.Event.Kind.isKprobe():
			continue
		case f == UprobeEvents && !p.Event.Kind.IsUprobe():
			continue
		case f == SyntheticEvents:
			if p.Event.Kind != Synthetic {
				continue
			}
			line = p.Event.Synth.Readback()
		}
		b.WriteString(line)
		b.WriteByte('\n')
	}
	return b.String()
}

// ProbePlaces returns the GROUP/EVENT of every probe point in the order of
// the kernel's dynamic event list (creation order, a probe appended to an
// event after others were created coming after them): the order of the
// readback and of kprobe_profile and uprobe_profile.
func (r *Registry) ProbePlaces() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]string, len(r.probes))
	for i, p := range r.probes {
		out[i] = p.Event.Group + "/" + p.Event.Name
	}
	return out
}

// Events returns snapshots of the events in creation order.
func (r *Registry) Events() []*Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]*Event, len(r.events))
	for i, e := range r.events {
		out[i] = r.viewed(e.snapshot())
	}
	return out
}

// Event returns a snapshot of the event group/name, or nil.
func (r *Registry) Event(group, name string) *Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	if e := r.findEvent(group, name); e != nil {
		return r.viewed(e.snapshot())
	}
	return nil
}

// snapshot copies the event's mutable state (enable state, counters, the
// probe list) so that callers read it without the registry's lock while
// other writers change the live event. Probes and arguments are immutable
// once registered and are shared.
func (e *Event) snapshot() *Event {
	cp := *e
	cp.Probes = append([]*Probe(nil), e.Probes...)
	return &cp
}

func (r *Registry) findEvent(group, name string) *Event {
	for _, e := range r.events {
		if e.Group == group && e.Name == name {
			return e
		}
	}
	return nil
}

// SetEnabled enables or disables ev, as writing its enable file does.
func (r *Registry) SetEnabled(ev *Event, on bool) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if e := r.findEvent(ev.Group, ev.Name); e != nil && e.ID == ev.ID {
		if r.view != nil {
			r.view.of(e).enabled = on
			return nil
		}
		e.Enabled = on
		return nil
	}
	return &WriteError{Errno: syscall.ENODEV}
}

// SetSoft puts ev in soft mode or takes it out (Event.Soft).
func (r *Registry) SetSoft(ev *Event, on bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if e := r.findEvent(ev.Group, ev.Name); e != nil && e.ID == ev.ID {
		if r.view != nil {
			r.view.of(e).soft = on
			return
		}
		e.Soft = on
	}
}

// SetGenerated marks the synthetic event name as generated by a hist
// trigger's action, or not (Event.Generated).
func (r *Registry) SetGenerated(name string, on bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if e := r.findSynthetic(name); e != nil {
		if r.view != nil {
			r.view.of(e).generated = on
			return
		}
		e.Generated = on
	}
}

// Truncate is an O_TRUNC open of control file f: it removes every event in
// the file's scope (kprobe_events: kprobes; dynamic_events: all), as the
// kernel's dyn_events_release_all does. When one of them is busy it fails
// with EBUSY and removes nothing: a probe event is busy while enabled (or
// in soft mode), a synthetic event while a hist action generates it. Then
// the events go in order until one cannot (an enabled synthetic event):
// the write fails with EBUSY and the events before it are gone.
func (r *Registry) Truncate(f File) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	scope := scopeOf(f)
	for _, p := range r.probes {
		ev := p.Event
		busy := r.held(ev)
		if ev.Kind == Synthetic {
			// synth_event_is_busy looks at the references only.
			busy = r.generated(ev)
		}
		if scope.has(ev.Kind) && busy {
			return &WriteError{Errno: syscall.EBUSY}
		}
	}
	for _, p := range append([]*Probe(nil), r.probes...) {
		if scope.has(p.Event.Kind) {
			if err := r.freeProbe(p); err != 0 {
				return &WriteError{Errno: err}
			}
		}
	}
	return nil
}

type scope int

const (
	kprobeScope scope = iota
	allScope
	synthScope
	uprobeScope
)

// scopeOf is the events a control file lists, removes and truncates.
func scopeOf(f File) scope {
	switch f {
	case DynamicEvents:
		return allScope
	case SyntheticEvents:
		return synthScope
	case UprobeEvents:
		return uprobeScope
	}
	return kprobeScope
}

func (s scope) has(k Kind) bool {
	switch s {
	case allScope:
		return true
	case synthScope:
		return k == Synthetic
	case uprobeScope:
		return k.IsUprobe()
	}
	return k.isKprobe()
}

// freeProbe removes one probe like the kernel's unregister functions: a
// probe with siblings just leaves its event; the last probe of an enabled
// event cannot go (EBUSY).
func (r *Registry) freeProbe(p *Probe) syscall.Errno {
	ev := p.Event
	// The last probe of an event goes only when the event is neither
	// enabled nor held by an event probe attached to it.
	if len(ev.Probes) == 1 && (r.held(ev) || r.referenced(ev)) {
		return syscall.EBUSY
	}
	if ev.Kind == Tprobe && !p.Pending {
		delete(r.tpStubs, p.Symbol)
	}
	for i, q := range r.probes {
		if q == p {
			r.probes = append(r.probes[:i:i], r.probes[i+1:]...)
			break
		}
	}
	for i, q := range ev.Probes {
		if q == p {
			ev.Probes = append(ev.Probes[:i:i], ev.Probes[i+1:]...)
			break
		}
	}
	if len(ev.Probes) == 0 {
		for i, e := range r.events {
			if e == ev {
				r.events = append(r.events[:i:i], r.events[i+1:]...)
				break
			}
		}
		if i := ev.ID - r.firstID; i >= 0 && i < len(r.idUsed) {
			r.idUsed[i] = false
		}
		for v := range r.views {
			delete(v.state, ev.Serial)
		}
	}
	return 0
}

// allocID returns the lowest free event ID.
func (r *Registry) allocID() int {
	if r.dialect.MonotonicEventIDs && r.firstID+len(r.idUsed) <= maxEventType {
		r.idUsed = append(r.idUsed, true)
		return r.firstID + len(r.idUsed) - 1
	}
	for i, used := range r.idUsed {
		if !used {
			r.idUsed[i] = true
			return r.firstID + i
		}
	}
	r.idUsed = append(r.idUsed, true)
	return r.firstID + len(r.idUsed) - 1
}

// maxEventType is TRACE_EVENT_TYPE_MAX, the largest event type ID.
const maxEventType = 1<<16 - 1

// addEvent registers a new event with its first probe.
func (r *Registry) addEvent(ev *Event, p *Probe) {
	ev.ID = r.allocID()
	r.serial++
	ev.Serial = r.serial
	ev.Probes = []*Probe{p}
	p.Event = ev
	r.events = append(r.events, ev)
	r.probes = append(r.probes, p)
	r.defined = ev
}

// addProbe adds probe p to event old, or, when old is nil, registers it
// as the first probe of a new event GROUP/NAME of kind.
func (r *Registry) addProbe(old *Event, group, name string, kind Kind, p *Probe) {
	if old != nil {
		r.appendProbe(old, p)
		return
	}
	r.addEvent(&Event{Group: group, Name: name, Kind: kind, Args: p.Args}, p)
}

// appendProbe adds a probe to an existing event.
func (r *Registry) appendProbe(ev *Event, p *Probe) {
	p.Event = ev
	ev.Probes = append(ev.Probes, p)
	r.probes = append(r.probes, p)
	r.defined = ev
}
