package tracefs

import (
	"syscall"

	"github.com/ktrace-dev/ktrace/kernel"
)

// StaticEvent is one of the kernel's built-in trace events: a tracepoint's
// events/SYSTEM/EVENT directory, whose format file is the kernel's own
// text.
type StaticEvent struct {
	System, Name string
	ID           int
	Format       string
	// Internal marks the tracer's own events (events/ftrace/): no
	// enable or filter file, not in available_events or set_event; the
	// trace_marker's event (MarkerEvent) alone takes triggers.
	Internal bool
}

// MarkerEvent is the event a trace_marker write records
// (events/ftrace/print), the one internal event with triggers.
const MarkerEvent = kernel.FtraceSystem + "/print"

// StaticEvents turns a kernel model's tracepoints into the static events
// of its tracefs, in the kernel's order (the order of available_events).
// A model without tracepoint formats has none.
func StaticEvents(m *kernel.Model) []StaticEvent {
	tps, _, err := m.Tracepoints()
	if err != nil {
		return nil
	}
	out := staticFromTracepoints(tps)
	// The tracer's own events follow; a model without them has none.
	ft, _ := m.FtraceEvents()
	for _, tp := range ft {
		out = append(out, StaticEvent{System: tp.System, Name: tp.Name, Format: tp.Format, ID: tp.ID(), Internal: true})
	}
	return out
}

func staticFromTracepoints(tps []kernel.Tracepoint) []StaticEvent {
	ordered := make([]kernel.Tracepoint, len(tps))
	copy(ordered, tps)
	kernel.SortKernelOrder(ordered)
	out := make([]StaticEvent, 0, len(ordered))
	for i := range ordered {
		tp := &ordered[i]
		out = append(out, StaticEvent{System: tp.System, Name: tp.Name, Format: tp.Format, ID: tp.ID()})
	}
	return out
}

// staticSet is the FS's static events, loaded on first use (the host
// model reads ~1,500 format files from the running kernel's tracefs), and
// their enabled state (guarded by FS.mu).
type staticSet struct {
	list   []StaticEvent
	index  map[string]int // "SYSTEM/EVENT" -> position in list
	groups map[string]bool
	// internal are the groups of internal events (StaticEvent.Internal).
	internal map[string]bool
	on       []bool
}

// statics returns the static events, loading them on first use.
func (f *FS) statics() *staticSet {
	f.staticOnce.Do(func() {
		s := &staticSet{index: map[string]int{}, groups: map[string]bool{}, internal: map[string]bool{}}
		if f.staticFn != nil {
			s.list = f.staticFn()
		}
		for i, e := range s.list {
			s.index[e.System+"/"+e.Name] = i
			s.groups[e.System] = true
			if e.Internal {
				s.internal[e.System] = true
			}
		}
		s.on = make([]bool, len(s.list))
		f.static.Store(s)
	})
	return f.static.Load()
}

// staticInfo is the EventInfo of static event i.
func (f *FS) staticInfo(s *staticSet, i int) EventInfo {
	e := &s.list[i]
	f.mu.Lock()
	on := s.on[i]
	f.mu.Unlock()
	return EventInfo{Group: e.System, Name: e.Name, ID: e.ID, Enabled: on, Static: true, Internal: e.Internal}
}

// events lists every event of the tree: the backend's dynamic events in
// creation order, then the static ones in the kernel's order. Internal
// events are not among them (internalEvents lists them).
func (f *FS) events() []EventInfo {
	evs := f.b.Events()
	s := f.statics()
	if len(s.list) == 0 {
		return evs
	}
	out := make([]EventInfo, 0, len(evs)+len(s.list))
	out = append(out, evs...)
	f.mu.Lock()
	for i := range s.list {
		e := &s.list[i]
		if e.Internal {
			continue
		}
		out = append(out, EventInfo{Group: e.System, Name: e.Name, ID: e.ID, Enabled: s.on[i], Static: true})
	}
	f.mu.Unlock()
	return out
}

// internalEvents lists the internal events (StaticEvent.Internal), whose
// directories the tree shows beside the others'.
func (f *FS) internalEvents() []EventInfo {
	s := f.statics()
	var out []EventInfo
	for i := range s.list {
		if s.list[i].Internal {
			out = append(out, f.staticInfo(s, i))
		}
	}
	return out
}

// internalEntries are an internal event's files: format, hist and id, and
// the trigger file of the trace_marker's event.
func internalEntries(group, name string) []entry {
	var out []entry
	for _, e := range eventEntries {
		switch e.kind {
		case nEvEnable, nEvFilter:
			continue
		case nEvTrigger:
			if group+"/"+name != MarkerEvent {
				continue
			}
		}
		out = append(out, e)
	}
	return out
}

// kernelOrder lists every event as the kernel's event list holds them,
// which available_events and set_event show: the newest dynamic event
// first (the kernel adds an event at the list's head), then the static
// events in boot order.
func (f *FS) kernelOrder() []EventInfo {
	evs := f.events()
	n := 0
	for n < len(evs) && !evs[n].Static {
		n++
	}
	for i, j := 0, n-1; i < j; i, j = i+1, j-1 {
		evs[i], evs[j] = evs[j], evs[i]
	}
	return evs
}

// eventFormat is the format file of a dynamic or static event.
func (f *FS) eventFormat(group, name string) (string, bool) {
	if s, ok := f.b.Format(group, name); ok {
		return s, true
	}
	s := f.statics()
	if i, ok := s.index[group+"/"+name]; ok {
		return s.list[i].Format, true
	}
	return "", false
}

// hasGroupAny reports whether group is a dynamic or static event group.
func (f *FS) hasGroupAny(evs []EventInfo, group string) bool {
	return hasGroup(evs, group) || f.statics().groups[group]
}

// findEventAny finds a dynamic event, else a static one.
func (f *FS) findEventAny(evs []EventInfo, group, name string) (EventInfo, bool) {
	if e, ok := findEvent(evs, group, name); ok {
		return e, true
	}
	s := f.statics()
	if i, ok := s.index[group+"/"+name]; ok {
		return f.staticInfo(s, i), true
	}
	return EventInfo{}, false
}

// StaticTracer is implemented by backends that trace the kernel's static
// events: SetStaticEnabled attaches (on) or detaches one. An FS whose
// backend does not implement it keeps the enabled state only.
type StaticTracer interface {
	SetStaticEnabled(ev StaticEvent, on bool) error
}

// setStaticStates records the enable state of static events that the
// backend's triggers switched ("SYSTEM/EVENT").
func (f *FS) setStaticStates(on map[string]bool) {
	if len(on) == 0 {
		return
	}
	s := f.statics()
	f.mu.Lock()
	defer f.mu.Unlock()
	for name, v := range on {
		if i, ok := s.index[name]; ok {
			s.on[i] = v
		}
	}
}

// setStaticEnabled enables or disables a static event: through the
// backend where it traces them, else as state kept and read back.
func (f *FS) setStaticEnabled(group, name string, on bool) error {
	s := f.statics()
	i, ok := s.index[group+"/"+name]
	if !ok {
		return syscall.ENOENT
	}
	f.mu.Lock()
	cur := s.on[i]
	f.mu.Unlock()
	if cur == on {
		return nil
	}
	if on {
		f.expand()
	}
	if t, ok := f.b.(StaticTracer); ok {
		if err := t.SetStaticEnabled(s.list[i], on); err != nil {
			return err
		}
	}
	f.mu.Lock()
	s.on[i] = on
	f.mu.Unlock()
	return nil
}
