package live

import (
	"fmt"
	"slices"
	"syscall"

	"github.com/cilium/ebpf"

	"github.com/ktrace-dev/ktrace/events"
	"github.com/ktrace-dev/ktrace/tracefs"
	"github.com/ktrace-dev/ktrace/tracer"
	"github.com/ktrace-dev/ktrace/trigger"
)

// Hist triggers on the backend's events are counted by the events'
// programs (tracer.Hist): an event with active hist triggers is attached
// even while disabled, in soft mode, as the kernel enables it, and its
// hist file is read from the histograms' maps.

// histState is the backend's histograms.
type histState struct {
	// of maps each hist trigger to its histogram; triggers with one name=
	// share one (named).
	of    map[*trigger.Trigger]*tracer.Hist
	named map[string]*namedHist
	// clears is the trigger's Clears count the histogram has honoured.
	clears map[*trigger.Trigger]int
	// events lists each event's hist triggers, in list order.
	events map[evID][]*trigger.Trigger
	// static are the counting programs of static events (static_hist.go).
	static map[evID]*staticHist
	// switches are the trace switches of the events with hist triggers
	// (tracer.EventOptions.TraceSwitch): enabling and disabling such an
	// event flips its switch, its programs stay.
	switches map[evID]*ebpf.Map
	// statics are the kernel's static events by SYSTEM/EVENT, once
	// looked up.
	statics map[string]tracefs.StaticEvent
}

type namedHist struct {
	h    *tracer.Hist
	refs int
}

func newHistState() histState {
	return histState{
		of:       map[*trigger.Trigger]*tracer.Hist{},
		named:    map[string]*namedHist{},
		clears:   map[*trigger.Trigger]int{},
		events:   map[evID][]*trigger.Trigger{},
		static:   map[evID]*staticHist{},
		switches: map[evID]*ebpf.Map{},
	}
}

var _ tracefs.HistBackend = (*Backend)(nil)

// SetTriggers gives the histograms of an event's hist triggers to its
// programs: new triggers get a histogram, removed ones lose theirs,
// "clear" empties one, and the event is attached again with its active
// (not paused) histograms. Other trigger commands are refused.
func (b *Backend) SetTriggers(group, name string, l *trigger.List) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	var list, cmds []*trigger.Trigger
	for _, t := range l.Triggers {
		if t.Hist == nil {
			cmds = append(cmds, t)
			continue
		}
		list = append(list, t)
	}
	ev := b.R.Event(group, name)
	if len(cmds) > 0 && ev != nil && ev.Kind == events.Synthetic {
		// A synthetic event's records are written by the programs
		// that generate it, which run its hist triggers only.
		return b.refuse(group, name, fmt.Errorf("%s triggers on a synthetic event: %w", cmds[0].Cmd, tracer.ErrNotSupported))
	}
	var se *tracefs.StaticEvent
	var key evID
	switch {
	case ev != nil:
		key = evID{ev.Group, ev.Name, ev.Serial}
	default:
		if se = b.staticEvent(group, name); se == nil {
			if len(list) == 0 {
				return nil
			}
			return b.refuse(group, name, fmt.Errorf("no such event: %w", syscall.ENODEV))
		}
		key = evID{group, name, staticSerial}
	}
	st := &b.hists
	var made []*trigger.Trigger
	undo := func() {
		for _, t := range made {
			st.release(t)
		}
	}
	for _, t := range list {
		if st.of[t] != nil {
			continue
		}
		if n := st.named[t.Hist.Name]; t.Hist.Name != "" && n != nil {
			n.refs++
			st.of[t] = n.h
		} else {
			h, err := tracer.NewHist(t, st.histOf)
			if err != nil {
				undo()
				return b.refuse(group, name, err)
			}
			st.of[t] = h
			if t.Hist.Name != "" {
				st.named[t.Hist.Name] = &namedHist{h: h, refs: 1}
			}
		}
		st.clears[t] = t.Clears
		made = append(made, t)
	}
	old := st.events[key]
	st.events[key] = list
	// An event with hist triggers gets a trace switch; one without loses
	// it (closed once its programs are replaced).
	var dropSwitch *ebpf.Map
	synthetic := ev != nil && ev.Kind == events.Synthetic
	if se == nil && !synthetic {
		// An event with triggers is attached in soft mode, as is the
		// target of an enable_event or disable_event trigger.
		soft := len(list) > 0 || len(cmds) > 0 || b.targeted(key)
		switch sw := st.switches[key]; {
		case soft && sw == nil:
			m, err := newTraceSwitch()
			if err != nil {
				st.events[key] = old
				undo()
				return b.refuse(group, name, err)
			}
			st.switches[key] = m
		case !soft && sw != nil:
			dropSwitch = sw
			delete(st.switches, key)
		}
	}
	commit := func() {}
	if !synthetic {
		c, err := b.setCommands(key, cmds)
		if err != nil {
			st.events[key] = old
			undo()
			return b.refuse(group, name, err)
		}
		commit = c
	}
	defer func() {
		if dropSwitch != nil {
			dropSwitch.Close()
		}
	}()
	apply := func() error {
		switch {
		case se != nil:
			return b.attachStaticHists(se, key)
		case synthetic:
			// Its histograms count in the programs that generate it.
			return b.regenerate(ev.Name)
		}
		return b.reattach(ev, ev.Enabled)
	}
	if err := apply(); err != nil {
		st.events[key] = old
		undo()
		apply()
		return err
	}
	commit()
	keep := map[*trigger.Trigger]bool{}
	for _, t := range list {
		keep[t] = true
		if err := st.of[t].SetPaused(t.Paused); err != nil && b.warn != nil {
			fmt.Fprintf(b.warn, "ktrace: %s/%s: %v\n", group, name, err)
		}
		if t.Clears != st.clears[t] {
			st.clears[t] = t.Clears
			if err := st.of[t].Clear(); err != nil && b.warn != nil {
				fmt.Fprintf(b.warn, "ktrace: %s/%s: %v\n", group, name, err)
			}
		}
	}
	for _, t := range old {
		if !keep[t] {
			st.release(t)
		}
	}
	if len(list) == 0 {
		delete(st.events, key)
	}
	if err := b.retarget(key); err != nil && b.warn != nil {
		fmt.Fprintf(b.warn, "ktrace: %s/%s: %v\n", group, name, err)
	}
	return nil
}

// newTraceSwitch makes an event's trace switch, off.
func newTraceSwitch() (*ebpf.Map, error) {
	m, err := ebpf.NewMap(&ebpf.MapSpec{Name: "ktrace_switch", Type: ebpf.Array, KeySize: 4, ValueSize: 4, MaxEntries: 1})
	if err != nil {
		return nil, fmt.Errorf("creating an event's trace switch: %w", err)
	}
	return m, nil
}

// setSwitch turns an event's tracing on or off through its switch.
func setSwitch(m *ebpf.Map, on bool) error {
	v := uint32(0)
	if on {
		v = 1
	}
	if err := m.Put(uint32(0), v); err != nil {
		return fmt.Errorf("setting an event's trace switch: %w", err)
	}
	return nil
}

// staticSerial is the evID serial of the kernel's static events.
const staticSerial = ^uint64(0)

// staticEvent finds one of the kernel's static events.
func (b *Backend) staticEvent(group, name string) *tracefs.StaticEvent {
	if b.hists.statics == nil {
		b.hists.statics = map[string]tracefs.StaticEvent{}
		for _, se := range tracefs.StaticEvents(b.model) {
			b.hists.statics[se.System+"/"+se.Name] = se
		}
	}
	if se, ok := b.hists.statics[group+"/"+name]; ok {
		return &se
	}
	return nil
}

// refuse says on stderr why an event's triggers cannot be counted, and
// fails the write.
func (b *Backend) refuse(group, name string, err error) error {
	if b.warn != nil {
		fmt.Fprintf(b.warn, "ktrace: trigger %s/%s: %v\n", group, name, err)
	}
	return fmt.Errorf("trigger %s/%s: %w", group, name, syscall.EINVAL)
}

// histOf is the histogram of the hist trigger whose definition is o
// (nil: none), for the triggers that read its variables.
func (st *histState) histOf(o *trigger.Hist) *tracer.Hist {
	for t, h := range st.of {
		if t.Hist == o {
			return h
		}
	}
	return nil
}

// release drops trigger t's histogram (the last user of a named one
// closes it). Its programs must be detached.
func (st *histState) release(t *trigger.Trigger) {
	h := st.of[t]
	if h == nil {
		return
	}
	delete(st.of, t)
	delete(st.clears, t)
	if n := st.named[t.Hist.Name]; t.Hist.Name != "" && n != nil && n.h == h {
		if n.refs--; n.refs > 0 {
			return
		}
		delete(st.named, t.Hist.Name)
	}
	h.Close()
}

// activeHists are the histograms an event's programs count into: its hist
// triggers, paused ones included (their pause switch stops them, which an
// enable_hist trigger may flip). Called with mu held.
func (b *Backend) activeHists(key evID) []*tracer.Hist {
	var out []*tracer.Hist
	for _, t := range b.hists.events[key] {
		if h := b.hists.of[t]; h != nil && !slices.Contains(out, h) {
			out = append(out, h)
		}
	}
	return out
}

// HistTable reads the histogram of hist trigger t.
func (b *Backend) HistTable(group, name string, t *trigger.Trigger) *trigger.Table {
	b.mu.Lock()
	defer b.mu.Unlock()
	h := b.hists.of[t]
	if h == nil {
		return nil
	}
	tab, err := h.Table(b.HistNames())
	if err != nil {
		if b.warn != nil {
			fmt.Fprintf(b.warn, "ktrace: hist %s/%s: %v\n", group, name, err)
		}
		return nil
	}
	return tab
}

// HistHits is the hits the histogram of t counted so far (0 when it has
// none, or its counts cannot be read).
func (b *Backend) HistHits(group, name string, t *trigger.Trigger) uint64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	h := b.hists.of[t]
	if h == nil {
		return 0
	}
	n, err := h.Hits()
	if err != nil {
		if b.warn != nil {
			fmt.Fprintf(b.warn, "ktrace: hist %s/%s: %v\n", group, name, err)
		}
		return 0
	}
	return n
}

// HistNames resolves .sym and .syscall keys through the kernel model.
func (b *Backend) HistNames() trigger.Names { return b.model }

// HistSort is the running kernel's sort.
func (b *Backend) HistSort() trigger.SortVariant {
	major, minor, _ := b.model.KernelVersion()
	return trigger.SortFor(major, minor)
}

// closeHists releases every histogram; the programs are detached. Called
// with mu held.
func (b *Backend) closeHists() {
	for key, sh := range b.hists.static {
		sh.close()
		delete(b.hists.static, key)
	}
	for key, sw := range b.hists.switches {
		sw.Close()
		delete(b.hists.switches, key)
	}
	for t := range b.hists.of {
		b.hists.release(t)
	}
	b.hists = newHistState()
	for name := range b.synths {
		b.dropSynth(name)
	}
}
