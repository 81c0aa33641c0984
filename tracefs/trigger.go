package tracefs

import (
	"errors"
	"slices"
	"strings"
	"syscall"

	"github.com/ktrace-dev/ktrace/events"
	"github.com/ktrace-dev/ktrace/filter"
	"github.com/ktrace-dev/ktrace/synth"
	"github.com/ktrace-dev/ktrace/trigger"
)

// Event triggers (events/GROUP/EVENT/trigger and hist): the trigger
// package parses them as the FS's release does; this file keeps each
// event's list. The emulated events fire nothing, so triggers never run
// and histograms stay empty, unless the backend counts them
// (HistBackend).

// HistBackend is a backend whose events count their hist triggers' hits
// (the live backend): the FS tells it of every change of an event's
// trigger list, and reads the histograms from it.
type HistBackend interface {
	// SetTriggers is called with an event's trigger list after each
	// change. An error undoes the change and fails the write with the
	// error's errno.
	SetTriggers(group, name string, l *trigger.List) error
	// HistTable is the histogram of hist trigger t of the event; nil
	// when nothing was counted.
	HistTable(group, name string, t *trigger.Trigger) *trigger.Table
	// HistHits is the hits hist trigger t of the event counted (its
	// table's Totals), read without the table: a poller of the hist
	// file asks often.
	HistHits(group, name string, t *trigger.Trigger) uint64
	// HistNames resolves the names of .sym, .sym-offset and .syscall
	// keys.
	HistNames() trigger.Names
	// HistSort is the running kernel's sort, which orders entries that
	// sort equal.
	HistSort() trigger.SortVariant
}

// TriggerStater is a backend whose programs run trigger commands: before
// an enable or trigger file is read, it writes what they changed (soft
// mode events switched on or off by enable_event and disable_event, the
// counts left) back into the events and trigger lists, and returns the
// enable state of the static events they switch ("SYSTEM/EVENT").
type TriggerStater interface {
	SyncTriggerState() (static map[string]bool)
}

// SoftModer is a backend whose events' removal depends on soft mode
// (events.Event.Soft).
type SoftModer interface {
	SetSoft(group, name string, on bool)
}

// SetSoft passes an event's soft mode to the registry.
func (b *RegistryBackend) SetSoft(group, name string, on bool) {
	if ev := b.R.Event(group, name); ev != nil {
		b.R.SetSoft(ev, on)
	}
}

// Generator is a backend whose synthetic events' removal depends on the
// hist actions generating them (events.Event.Generated).
type Generator interface {
	SetGenerated(name string, on bool)
}

// SetGenerated passes on whether a hist action generates synthetic event
// name.
func (b *RegistryBackend) SetGenerated(name string, on bool) { b.R.SetGenerated(name, on) }

// syncGenerated tells the backend which synthetic events hist actions
// generate.
func (f *FS) syncGenerated() {
	g, ok := f.b.(Generator)
	if !ok {
		return
	}
	used := map[string]bool{}
	f.mu.Lock()
	for _, l := range f.triggers {
		for _, h := range l.Hists() {
			for _, n := range h.SyntheticEvents() {
				used[n] = true
			}
		}
	}
	f.mu.Unlock()
	for _, e := range f.events() {
		if e.Group == synth.System {
			g.SetGenerated(e.Name, used[e.Name])
		}
	}
}

// syncSoft tells the backend which events are in soft mode, after a
// change of triggers, and which synthetic events hist actions generate.
func (f *FS) syncSoft() {
	f.syncGenerated()
	sm, _ := f.b.(SoftModer)
	for _, e := range f.events() {
		if e.Static {
			continue
		}
		soft := f.softMode(e)
		if soft {
			// Soft mode registers the event as enabling does.
			f.markEnabled(e)
		}
		if sm != nil {
			sm.SetSoft(e.Group, e.Name, soft)
		}
	}
}

// errnoOf is the errno an error carries, EINVAL when none.
func errnoOf(err error) syscall.Errno {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return errno
	}
	return syscall.EINVAL
}

// histText is the event's hist file.
func (f *FS) histText(e EventInfo) string {
	l := f.triggerList(e)
	hb, ok := f.b.(HistBackend)
	if !ok {
		// No histogram has entries: the order does not matter.
		return l.HistText(nil, nil, trigger.SortClassic)
	}
	return l.HistText(func(t *trigger.Trigger) *trigger.Table {
		return hb.HistTable(e.Group, e.Name, t)
	}, hb.HistNames(), hb.HistSort())
}

// triggerList returns the event's trigger list (an empty one when it has
// none; the caller must not keep it).
func (f *FS) triggerList(e EventInfo) *trigger.List {
	f.mu.Lock()
	defer f.mu.Unlock()
	if l, ok := f.triggers[eventKey{e.Group, e.Name, e.ID}]; ok {
		return l
	}
	return &trigger.List{}
}

// triggerEvents are the events triggers may name: every event of the
// tree, the internal ones included (a trace_marker write's event takes
// triggers, and onmatch() may name it).
func (f *FS) triggerEvents() []EventInfo {
	return append(f.events(), f.internalEvents()...)
}

// clearTriggers is an O_TRUNC open of a trigger file: the event's hist,
// enable_hist and disable_hist triggers go (only those commands
// unregister all on a truncating open; seen on 6.1 and 6.12), and the
// targets of the enable_hist/disable_hist triggers leave soft mode.
func (f *FS) clearTriggers(n node) {
	e, ok := findEvent(f.triggerEvents(), n.group, n.event)
	if !ok {
		return
	}
	k := eventKey{e.Group, e.Name, e.ID}
	f.mu.Lock()
	l := f.triggers[k]
	f.mu.Unlock()
	if l != nil {
		removed := l.ClearHist(f.histReferenced)
		ev := f.triggerEvent(e, f.triggerEvents())
		for _, h := range removed {
			trigger.DropHidden(h, ev)
		}
		f.mu.Lock()
		if len(l.Triggers) == 0 {
			delete(f.triggers, k)
		}
		f.mu.Unlock()
	}
	if hb, ok := f.b.(HistBackend); ok && l != nil {
		// The kernel's truncation cannot fail: the backend has dropped
		// what it could not keep, and says so itself.
		hb.SetTriggers(e.Group, e.Name, l)
	}
	f.syncSoft()
}

// softMode reports whether an event is in soft mode: it has triggers,
// or is the target of an enable/disable trigger (its enable file then
// ends in '*').
func (f *FS) softMode(e EventInfo) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if l := f.triggers[eventKey{e.Group, e.Name, e.ID}]; l != nil && len(l.Triggers) > 0 {
		return true
	}
	target := e.Group + ":" + e.Name
	for _, l := range f.triggers {
		if l.Targets(target) {
			return true
		}
	}
	// A function command's enable_event or disable_event.
	for _, p := range f.funcs.probes {
		for _, en := range p.entries {
			if en.event == e.Name && en.system == e.Group && en.event != "" {
				return true
			}
		}
	}
	return false
}

// histReferenced reports whether a hist trigger of any event reads a
// variable of h.
func (f *FS) histReferenced(h *trigger.Hist) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, l := range f.triggers {
		for _, x := range l.Hists() {
			if x.References(h) {
				return true
			}
		}
	}
	return false
}

// SyntheticFinder is a backend that knows the synthetic events'
// definitions (hist actions generating them are checked against them).
type SyntheticFinder interface {
	SyntheticEvent(name string) *synth.Event
}

// SyntheticEvent is the definition of synthetic event name, nil if none.
func (b *RegistryBackend) SyntheticEvent(name string) *synth.Event {
	if ev := b.R.Event(synth.System, name); ev != nil && ev.Kind == events.Synthetic {
		return ev.Synth
	}
	return nil
}

// triggerEvent is what the trigger parser needs to know of event e.
func (f *FS) triggerEvent(e EventInfo, evs []EventInfo) *trigger.Event {
	env := f.filterEnv()
	var fields *filter.Event
	if format, ok := f.eventFormat(e.Group, e.Name); ok {
		fields, _ = filter.FieldsFromFormat(format, env.Dialect.FilterCPUs)
	}
	if fields == nil {
		fields = &filter.Event{}
	}
	ev := &trigger.Event{
		System: e.Group, Name: e.Name, Fields: fields, Env: env,
		Exists: func(system, event string) bool {
			_, ok := findEvent(evs, system, event)
			return ok
		},
		Named: func(name string) *trigger.Hist {
			f.mu.Lock()
			defer f.mu.Unlock()
			for _, l := range f.triggers {
				if h := l.Named(name); h != nil {
					return h
				}
			}
			return nil
		},
		Hists: func(system, event string) ([]*trigger.Hist, bool) {
			o, ok := findEvent(evs, system, event)
			if !ok {
				return nil, false
			}
			f.mu.Lock()
			defer f.mu.Unlock()
			if l := f.triggers[eventKey{o.Group, o.Name, o.ID}]; l != nil {
				return l.Hists(), true
			}
			return nil, true
		},
		AllHists: func() []trigger.EventHists {
			f.mu.Lock()
			defer f.mu.Unlock()
			var out []trigger.EventHists
			for k, l := range f.triggers {
				if hs := l.Hists(); len(hs) > 0 {
					out = append(out, trigger.EventHists{System: k.group, Name: k.name, Hists: hs})
				}
			}
			return out
		},
		Referenced:    f.histReferenced,
		SnapshotTaken: f.condSnapshot,
	}
	ev.SetClock = func(name string) bool {
		_, err := f.writeTraceClock([]byte(name))
		return err == nil
	}
	ev.ListOf = func(system, event string) (*trigger.List, *trigger.Event) {
		o, ok := findEvent(evs, system, event)
		if !ok {
			return nil, nil
		}
		k := eventKey{o.Group, o.Name, o.ID}
		f.mu.Lock()
		l := f.triggers[k]
		if l == nil {
			l = &trigger.List{}
			f.triggers[k] = l
		}
		f.mu.Unlock()
		return l, f.triggerEvent(o, evs)
	}
	if sf, ok := f.b.(SyntheticFinder); ok {
		ev.Synthetic = sf.SyntheticEvent
	}
	return ev
}

// writeTrigger is one write(2) to an event's trigger file.
func (f *FS) writeTrigger(n node, p []byte) (int, error) {
	// The write starts from what the programs' triggers did (counts,
	// paused histograms).
	if ts, ok := f.b.(TriggerStater); ok {
		f.setStaticStates(ts.SyncTriggerState())
	}
	evs := f.triggerEvents()
	e, ok := findEvent(evs, n.group, n.event)
	if !ok {
		return 0, syscall.ENODEV
	}
	ev := f.triggerEvent(e, evs)
	k := eventKey{e.Group, e.Name, e.ID}
	f.mu.Lock()
	l, ok := f.triggers[k]
	if !ok {
		l = &trigger.List{}
	}
	// A hist write may change other events' lists (histograms the kernel
	// makes for field variables): all are restored if the backend refuses.
	saved := map[*trigger.List]trigger.Saved{l: l.Save()}
	for _, o := range f.triggers {
		saved[o] = o.Save()
	}
	f.mu.Unlock()
	r := l.Write(p, ev)
	if hb, ok := f.b.(HistBackend); ok && r.Errno == 0 {
		// The other events whose lists the write changed (the
		// histograms the kernel makes there for field variables) go
		// first: this event's triggers read their variables.
		others := f.changedLists(k, saved)
		var err error
		for _, o := range others {
			if err = hb.SetTriggers(o.key.group, o.key.name, o.list); err != nil {
				break
			}
		}
		if err == nil {
			err = hb.SetTriggers(e.Group, e.Name, l)
		}
		if err != nil {
			for o, s := range saved {
				o.Restore(s)
			}
			for _, o := range others {
				if _, had := saved[o.list]; !had {
					o.list.Restore(trigger.Saved{})
				}
				hb.SetTriggers(o.key.group, o.key.name, o.list)
			}
			r = trigger.Result{Errno: errnoOf(err)}
		}
	}
	f.mu.Lock()
	if r.Errno == 0 && addsSnapshot(saved[l], l) {
		// The kernel allocates the spare buffer when a snapshot
		// trigger or a snapshot() action is registered.
		f.allocSnapshot()
	}
	if len(l.Triggers) > 0 {
		f.triggers[k] = l
	} else {
		delete(f.triggers, k)
	}
	for k, o := range f.triggers {
		if len(o.Triggers) == 0 {
			delete(f.triggers, k)
		}
	}
	f.mu.Unlock()
	f.syncSoft()
	f.logErrors(r.Logs)
	if r.Errno != 0 {
		return 0, r.Errno
	}
	return len(p), nil
}

// keyedList is an event's trigger list.
type keyedList struct {
	key  eventKey
	list *trigger.List
}

// changedLists are the trigger lists of other events than k that differ
// from saved (or are new), in a stable order.
func (f *FS) changedLists(k eventKey, saved map[*trigger.List]trigger.Saved) []keyedList {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []keyedList
	for key, o := range f.triggers {
		if key == k {
			continue
		}
		s, had := saved[o]
		if had && slices.Equal(s.Triggers(), o.Triggers) {
			continue
		}
		if !had && len(o.Triggers) == 0 {
			continue
		}
		out = append(out, keyedList{key, o})
	}
	slices.SortFunc(out, func(a, b keyedList) int {
		return strings.Compare(a.key.group+"/"+a.key.name, b.key.group+"/"+b.key.name)
	})
	return out
}
