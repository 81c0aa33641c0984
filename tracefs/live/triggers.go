package live

import (
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/cilium/ebpf"

	"github.com/ktrace-dev/ktrace/bpfcode"
	"github.com/ktrace-dev/ktrace/events"
	"github.com/ktrace-dev/ktrace/tracefs"
	"github.com/ktrace-dev/ktrace/tracer"
	"github.com/ktrace-dev/ktrace/trigger"
)

// tracing_on and the trigger commands traceon, traceoff, enable_event and
// disable_event, run by the events' programs (bpfcode's trigger stage):
// tracing_on is a map every program reads before it writes a record;
// enable_event and disable_event flip their target's trace switch, the
// target being attached in soft mode meanwhile; a count lives in a map
// of its own, which the trigger file reads back.

var _ tracefs.TracingBackend = (*Backend)(nil)

// lazyMap is a map the backend makes at first use (tracing_on, the
// snapshot triggers' queue).
type lazyMap struct {
	once sync.Once
	m    *ebpf.Map
	err  error
}

// get returns the map, made by mk the first time.
func (l *lazyMap) get(mk func() (*ebpf.Map, error)) (*ebpf.Map, error) {
	l.once.Do(func() { l.m, l.err = mk() })
	return l.m, l.err
}

// tracing returns the tracing_on map (on when made).
func (b *Backend) tracing() (*ebpf.Map, error) {
	return b.tracingOn.get(func() (*ebpf.Map, error) {
		m, err := newTraceSwitch()
		if err == nil {
			err = setSwitch(m, true)
		}
		return m, err
	})
}

// SetTracingOn writes tracing_on.
func (b *Backend) SetTracingOn(on bool) error {
	m, err := b.tracing()
	if err != nil {
		return err
	}
	return setSwitch(m, on)
}

// TracingOn reads tracing_on, which a trigger may have changed.
func (b *Backend) TracingOn() bool {
	m, err := b.tracing()
	if err != nil {
		return true
	}
	var v uint32
	if err := m.Lookup(uint32(0), &v); err != nil {
		return true
	}
	return v != 0
}

// evTrigger is the state of one trigger command of an event.
type evTrigger struct {
	spec  *bpfcode.EventTrigger
	count *ebpf.Map // nil: unlimited
	// target is the event an enable_event or disable_event trigger
	// switches.
	target evID
}

func (t *evTrigger) close() {
	if t.count != nil {
		t.count.Close()
	}
}

// triggerKinds are the commands the programs run.
var triggerKinds = map[string]bpfcode.TriggerKind{
	"traceon": bpfcode.TraceOn, "traceoff": bpfcode.TraceOff,
	"enable_event": bpfcode.EnableEvent, "disable_event": bpfcode.DisableEvent,
	"enable_hist": bpfcode.EnableHist, "disable_hist": bpfcode.DisableHist,
	"snapshot": bpfcode.Snapshot, "stacktrace": bpfcode.Stacktrace,
}

// targets reports the commands that act on another event (which is in
// soft mode meanwhile).
func targets(k bpfcode.TriggerKind) bool {
	switch k {
	case bpfcode.EnableEvent, bpfcode.DisableEvent, bpfcode.EnableHist, bpfcode.DisableHist:
		return true
	}
	return false
}

// newEvTrigger makes the state of trigger t. Called with mu held.
func (b *Backend) newEvTrigger(t *trigger.Trigger) (*evTrigger, error) {
	kind, ok := triggerKinds[t.Cmd]
	if !ok {
		return nil, fmt.Errorf("%s triggers: %w", t.Cmd, tracer.ErrNotSupported)
	}
	et := &evTrigger{spec: &bpfcode.EventTrigger{Kind: kind, Filter: t.Filter}}
	switch kind {
	case bpfcode.Snapshot:
		q, err := b.snapshotQueue()
		if err != nil {
			return nil, err
		}
		et.spec.Queue = q
	case bpfcode.Stacktrace:
		st, err := b.staticTracer()
		if err != nil {
			return nil, err
		}
		et.spec.Ring, et.spec.Num = st.ring, stackNum
	}
	if targets(kind) {
		sys, name, _ := strings.Cut(t.Target, ":")
		switch ev := b.R.Event(sys, name); {
		case ev != nil && ev.Kind == events.Synthetic:
			return nil, fmt.Errorf("%s on the synthetic event %s: %w", t.Cmd, t.Target, tracer.ErrNotSupported)
		case ev != nil:
			et.target = evID{ev.Group, ev.Name, ev.Serial}
		case b.staticEvent(sys, name) != nil:
			et.target = evID{sys, name, staticSerial}
		default:
			return nil, fmt.Errorf("%s on %s: no such event: %w", t.Cmd, t.Target, tracer.ErrNotSupported)
		}
	}
	if t.Count >= 0 {
		m, err := ebpf.NewMap(&ebpf.MapSpec{Name: "ktrace_tcount", Type: ebpf.Array, KeySize: 4, ValueSize: 8, MaxEntries: 1})
		if err != nil {
			return nil, fmt.Errorf("creating a trigger's count: %w", err)
		}
		if err := m.Put(uint32(0), uint64(t.Count)); err != nil {
			m.Close()
			return nil, fmt.Errorf("setting a trigger's count: %w", err)
		}
		et.count = m
		et.spec.Count = m
	}
	return et, nil
}

// eventTriggers are the programs' triggers of an event: each trigger
// command's state, with the switches of the targets.
func (b *Backend) eventTriggers(key evID) ([]*bpfcode.EventTrigger, error) {
	var out []*bpfcode.EventTrigger
	for _, et := range b.trig.of[key] {
		switch et.spec.Kind {
		case bpfcode.EnableEvent, bpfcode.DisableEvent:
			sw := b.hists.switches[et.target]
			if sw == nil {
				return nil, fmt.Errorf("the target of an enable_event or disable_event trigger has no switch")
			}
			et.spec.Target = sw
		case bpfcode.EnableHist, bpfcode.DisableHist:
			// The target's histograms as they are now: a change of
			// them compiles this event again (retarget).
			et.spec.Pauses = nil
			for _, h := range b.activeHists(et.target) {
				et.spec.Pauses = append(et.spec.Pauses, h.PauseSwitch())
			}
		}
		out = append(out, et.spec)
	}
	return out, nil
}

// trigState is the backend's trigger commands other than hist.
type trigState struct {
	// of lists each event's trigger commands, in list order; the
	// triggers each state was made from are in from.
	of   map[evID][]*evTrigger
	from map[evID][]*trigger.Trigger
}

// setCommands makes the states of an event's trigger commands other than
// hist (list order) and gives their targets a switch, attaching them in
// soft mode. On error nothing changed. Called with mu held.
func (b *Backend) setCommands(key evID, cmds []*trigger.Trigger) (undo func(), err error) {
	st := &b.trig
	if st.of == nil {
		st.of, st.from = map[evID][]*evTrigger{}, map[evID][]*trigger.Trigger{}
	}
	old, oldFrom := st.of[key], st.from[key]
	var made []*evTrigger
	keep := map[*trigger.Trigger]*evTrigger{}
	for i, t := range oldFrom {
		keep[t] = old[i]
	}
	var list []*evTrigger
	for _, t := range cmds {
		if et := keep[t]; et != nil {
			list = append(list, et)
			delete(keep, t)
			continue
		}
		et, err := b.newEvTrigger(t)
		if err != nil {
			for _, m := range made {
				m.close()
			}
			return nil, err
		}
		made = append(made, et)
		list = append(list, et)
	}
	st.of[key], st.from[key] = list, cmds
	if len(list) == 0 {
		delete(st.of, key)
		delete(st.from, key)
	}
	if err := b.syncTargets(); err != nil {
		st.of[key], st.from[key] = old, oldFrom
		for _, m := range made {
			m.close()
		}
		b.syncTargets()
		return nil, err
	}
	return func() {
		// The change is kept: the states no list holds any more go.
		for _, et := range keep {
			et.close()
		}
	}, nil
}

// targeted reports whether an enable_event or disable_event trigger of
// some event switches key.
func (b *Backend) targeted(key evID) bool {
	if b.ftargets[key] {
		return true
	}
	for _, list := range b.trig.of {
		for _, et := range list {
			if targets(et.spec.Kind) && et.target == key {
				return true
			}
		}
	}
	return false
}

// syncTargets gives every target of an enable_event or disable_event
// trigger or function command a trace switch and attaches it in soft mode; an event that is
// no target any more (and has no histogram) loses its switch and is
// attached again as its enable says. Called with mu held.
func (b *Backend) syncTargets() error {
	var errs []error
	var keys []evID
	for _, list := range b.trig.of {
		for _, et := range list {
			if targets(et.spec.Kind) {
				keys = append(keys, et.target)
			}
		}
	}
	for key := range b.ftargets {
		// A function command's enable_event or disable_event.
		keys = append(keys, key)
	}
	for _, key := range keys {
		if b.hists.switches[key] != nil {
			continue
		}
		if key.serial != staticSerial {
			// A static event's program makes its own switch.
			m, err := newTraceSwitch()
			if err != nil {
				errs = append(errs, err)
				continue
			}
			b.hists.switches[key] = m
		}
		errs = append(errs, b.recompile(key))
	}
	for key, sw := range b.hists.switches {
		if len(b.hists.events[key]) > 0 || len(b.trig.of[key]) > 0 || b.targeted(key) {
			continue
		}
		if key.serial != staticSerial {
			delete(b.hists.switches, key)
		}
		errs = append(errs, b.recompile(key))
		if key.serial != staticSerial {
			sw.Close()
		}
	}
	return errors.Join(errs...)
}

var _ tracefs.TriggerStater = (*Backend)(nil)

// SyncTriggerState writes back what the programs' triggers changed: the
// counts, and the enable state of the events enable_event and
// disable_event switch.
func (b *Backend) SyncTriggerState() (static map[string]bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for key := range b.trig.of {
		b.syncCounts(key)
	}
	for t, h := range b.hists.of {
		if p, err := h.Paused(); err == nil {
			t.Paused = p
		}
	}
	for key, sw := range b.hists.switches {
		if !b.targeted(key) {
			continue
		}
		if key.serial == staticSerial {
			var v uint32
			if err := sw.Lookup(uint32(0), &v); err == nil {
				name := key.group + "/" + key.name
				if static == nil {
					static = map[string]bool{}
				}
				static[name] = v != 0
				if b.staticOn == nil {
					b.staticOn = map[string]bool{}
				}
				b.staticOn[name] = v != 0
			}
			continue
		}
		ev := b.R.Event(key.group, key.name)
		if ev == nil || ev.Serial != key.serial {
			continue
		}
		var v uint32
		if err := sw.Lookup(uint32(0), &v); err != nil {
			continue
		}
		if on := v != 0; on != ev.Enabled {
			b.R.SetEnabled(ev, on)
		}
	}
	return static
}

// recompile attaches event key's programs again (its histograms,
// triggers or soft mode changed): a static event's own program, a probe
// event's programs as its enable says. Called with mu held.
func (b *Backend) recompile(key evID) error {
	if key.serial == staticSerial {
		if se := b.staticEvent(key.group, key.name); se != nil {
			return b.attachStaticHists(se, key)
		}
		return nil
	}
	if ev := b.R.Event(key.group, key.name); ev != nil && ev.Serial == key.serial {
		return b.reattach(ev, ev.Enabled)
	}
	return nil
}

// retarget compiles again the events whose enable_hist or disable_hist
// triggers act on key's histograms (they changed). Called with mu held.
func (b *Backend) retarget(key evID) error {
	var errs []error
	for src, list := range b.trig.of {
		for _, et := range list {
			if (et.spec.Kind != bpfcode.EnableHist && et.spec.Kind != bpfcode.DisableHist) || et.target != key || src == key {
				continue
			}
			errs = append(errs, b.recompile(src))
			break
		}
	}
	return errors.Join(errs...)
}

// syncCounts writes the triggers' counts back into an event's trigger
// list, as the kernel's trigger file shows them.
func (b *Backend) syncCounts(key evID) {
	for i, et := range b.trig.of[key] {
		if et.count == nil {
			continue
		}
		var v uint64
		if err := et.count.Lookup(uint32(0), &v); err == nil {
			b.trig.from[key][i].Count = int64(v)
		}
	}
}

// closeTriggers releases every trigger's state. Called with mu held.
func (b *Backend) closeTriggers() {
	for _, list := range b.trig.of {
		for _, et := range list {
			et.close()
		}
	}
	b.trig = trigState{}
	if m := b.tracingOn.m; m != nil {
		m.Close()
	}
	if m := b.snapQ.m; m != nil {
		m.Close()
	}
}
