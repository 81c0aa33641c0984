package record

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/ktrace-dev/ktrace/bpfcode"
	"github.com/ktrace-dev/ktrace/events"
	"github.com/ktrace-dev/ktrace/filter"
	"github.com/ktrace-dev/ktrace/grammar"
	"github.com/ktrace-dev/ktrace/kernel"
	"github.com/ktrace-dev/ktrace/tracer"
	"github.com/ktrace-dev/ktrace/trigger"
)

// Hist triggers of a recording (record --trigger 'GROUP/EVENT:hist:...'):
// parsed as the kernel parses a write to the event's trigger file, counted
// by the event's programs, and printed as its hist file at the end.

// Triggers are one event's triggers.
type Triggers struct {
	Event *events.Event
	List  *trigger.List
	hists map[*trigger.Trigger]*tracer.Hist
}

// TriggerError is a trigger the kernel would refuse: its errno and the
// error_log entries it would write.
type TriggerError struct {
	Spec string
	Err  *events.WriteError
}

func (e *TriggerError) Error() string {
	if l := e.Err.Last(); l != nil {
		return fmt.Sprintf("trigger %q: %s (%v)", e.Spec, l.Msg, e.Err.Errno)
	}
	return fmt.Sprintf("trigger %q: %v", e.Spec, e.Err.Errno)
}

// WriteLog writes the error_log entries of the refusal, caret included.
func (e *TriggerError) WriteLog(w io.Writer) {
	for _, l := range e.Err.Logs {
		fmt.Fprintf(w, "ktrace: %s: error: %s\n  Command: %s\n%s^\n", l.Subsys, l.Msg, l.Cmd, strings.Repeat(" ", len("  Command: ")+l.Pos))
	}
}

// ParseTriggers parses each "GROUP/EVENT:COMMAND" against the events of
// the recording, as the kernel of dialect d takes COMMAND written to the
// event's trigger file, one after another. Only hist triggers are run by a
// recording.
func ParseTriggers(evs []*events.Event, specs []string, m *kernel.Model, d *grammar.Dialect) ([]*Triggers, error) {
	env := &filter.Env{Dialect: d, CPUs: 1}
	if m != nil {
		env.CPUs, env.Symbols = m.CPUs(), m
	}
	var out []*Triggers
	of := map[*events.Event]*Triggers{}
	for _, spec := range specs {
		name, cmd, ok := strings.Cut(spec, ":")
		group, evName, ok2 := strings.Cut(name, "/")
		if !ok || !ok2 || group == "" || evName == "" {
			return nil, fmt.Errorf("trigger %q: want GROUP/EVENT:COMMAND", spec)
		}
		var ev *events.Event
		for _, e := range evs {
			if e.Group == group && e.Name == evName {
				ev = e
			}
		}
		if ev == nil {
			return nil, fmt.Errorf("trigger %q: %s is not an event of the recording", spec, name)
		}
		fields, err := filter.FieldsFromFormat(ev.Format(), d.FilterCPUs)
		if err != nil {
			return nil, fmt.Errorf("trigger %q: %w", spec, err)
		}
		t := of[ev]
		if t == nil {
			t = &Triggers{Event: ev, List: &trigger.List{}}
			of[ev] = t
			out = append(out, t)
		}
		r := t.List.Write([]byte(cmd), &trigger.Event{
			System: group, Name: evName, Fields: fields, Env: env,
			Exists: func(system, event string) bool {
				for _, e := range evs {
					if e.Group == system && e.Name == event {
						return true
					}
				}
				return false
			},
			Named: func(name string) *trigger.Hist {
				for _, o := range out {
					if h := o.List.Named(name); h != nil {
						return h
					}
				}
				return nil
			},
		})
		if r.Errno != 0 {
			return nil, &TriggerError{Spec: spec, Err: &events.WriteError{Errno: r.Errno, Logs: r.Logs}}
		}
	}
	for _, t := range out {
		for _, tr := range t.List.Triggers {
			if tr.Hist == nil {
				return nil, fmt.Errorf("trigger %s/%s:%s: a recording runs hist triggers only", t.Event.Group, t.Event.Name, tr.Line())
			}
		}
	}
	return out, nil
}

// open makes the histograms of the triggers and the tracer options that
// count into them; named histograms share one.
func openHists(ts []*Triggers) (map[*events.Event]tracer.EventOptions, error) {
	opts := map[*events.Event]tracer.EventOptions{}
	named := map[string]*tracer.Hist{}
	// others finds the histogram of a trigger whose variables another
	// reads (defined before it).
	others := func(o *trigger.Hist) *tracer.Hist {
		for _, t := range ts {
			for tr, h := range t.hists {
				if tr.Hist == o {
					return h
				}
			}
		}
		return nil
	}
	for _, t := range ts {
		t.hists = map[*trigger.Trigger]*tracer.Hist{}
		o := opts[t.Event]
		for _, tr := range t.List.Triggers {
			h := named[tr.Hist.Name]
			if h == nil || tr.Hist.Name == "" {
				var err error
				if h, err = tracer.NewHist(tr, others); err != nil {
					closeHists(ts)
					return nil, err
				}
				if slices.ContainsFunc(h.Synthetics, func(s string) bool { return s != "" }) {
					h.Close()
					closeHists(ts)
					return nil, fmt.Errorf("trigger %s/%s:%s: a recording generates no synthetic events (ktrace sh and mount do): %w", t.Event.Group, t.Event.Name, tr.Line(), bpfcode.ErrHistUnsupported)
				}
				if tr.Hist.Name != "" {
					named[tr.Hist.Name] = h
				}
			}
			t.hists[tr] = h
			if !tr.Paused {
				o.Hists = append(o.Hists, h)
			}
		}
		opts[t.Event] = o
	}
	return opts, nil
}

func closeHists(ts []*Triggers) {
	for _, t := range ts {
		for _, h := range t.hists {
			h.Close()
		}
		t.hists = nil
	}
}

// writeHistsJSON writes each event's hist file as one JSON object:
// {"hist": "GROUP/EVENT", "text": "..."}.
func writeHistsJSON(w io.Writer, ts []*Triggers, m *kernel.Model) error {
	for _, t := range ts {
		var b strings.Builder
		if err := writeHists(&b, []*Triggers{t}, m); err != nil {
			return err
		}
		_, text, _ := strings.Cut(b.String(), "\n")
		line, err := json.Marshal(struct {
			Hist string `json:"hist"`
			Text string `json:"text"`
		}{t.Event.Group + "/" + t.Event.Name, text})
		if err != nil {
			return fmt.Errorf("record: %w", err)
		}
		w.Write(append(line, '\n'))
	}
	return nil
}

// writeHists writes each event's hist file.
func writeHists(w io.Writer, ts []*Triggers, m *kernel.Model) error {
	v := trigger.SortClassic
	var names trigger.Names
	if m != nil {
		major, minor, _ := m.KernelVersion()
		v, names = trigger.SortFor(major, minor), m
	}
	var errs []error
	for i, t := range ts {
		text := t.List.HistText(func(tr *trigger.Trigger) *trigger.Table {
			tab, err := t.hists[tr].Table(names)
			if err != nil {
				errs = append(errs, err)
			}
			return tab
		}, names, v)
		if i > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "# events/%s/%s/hist\n%s", t.Event.Group, t.Event.Name, text)
	}
	if len(errs) > 0 {
		return errs[0]
	}
	return nil
}
