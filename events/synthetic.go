package events

import (
	"syscall"

	"github.com/ktrace-dev/ktrace/grammar"
	"github.com/ktrace-dev/ktrace/synth"
)

// execSynthetic runs one line written to synthetic_events: a definition,
// or "!NAME" removing one (nothing is logged for a failed removal).
func (r *Registry) execSynthetic(line string) error {
	cmd, ok, err := synth.ParseSyntheticEvents(line, r.synthExists)
	if err != nil {
		return synthWriteError(err)
	}
	if !ok {
		return nil
	}
	if cmd.Delete {
		if errno := r.deleteSynthetic(cmd.Name); errno != 0 {
			return &WriteError{Errno: errno}
		}
		return nil
	}
	r.addSynthetic(cmd.Event)
	return nil
}

// createSynthetic is the synthetic front end of dynamic_events: "s:" lines.
func (r *Registry) createSynthetic(line string) createResult {
	cmd, mine, err := synth.ParseDynamic(line, r.synthExists)
	if !mine {
		return notMine
	}
	if err != nil {
		return createResult{err: synthWriteError(err)}
	}
	r.addSynthetic(cmd.Event)
	return createResult{}
}

func synthWriteError(err *synth.Error) *WriteError {
	we := &WriteError{Errno: err.Errno}
	if err.Code != grammar.SynthNone {
		we.Logs = []LogEntry{{Subsys: grammar.SynthSubsys, Msg: err.Code.Message(), Cmd: err.Cmd, Pos: err.Pos}}
	}
	return we
}

// synthExists reports whether a synthetic event is named name.
func (r *Registry) synthExists(name string) bool { return r.findSynthetic(name) != nil }

func (r *Registry) findSynthetic(name string) *Event {
	for _, e := range r.events {
		if e.Kind == Synthetic && e.Name == name {
			return e
		}
	}
	return nil
}

// addSynthetic registers a synthetic event in group synthetic, with one
// pseudo-probe holding its dynamic_events readback line.
func (r *Registry) addSynthetic(def *synth.Event) {
	ev := &Event{Group: synth.System, Name: def.Name, Kind: Synthetic, Synth: def}
	r.addEvent(ev, &Probe{Line: "s:" + synth.System + "/" + def.Readback()})
}

// deleteSynthetic removes the synthetic event name: ENOENT when there is
// none, EBUSY while it is enabled.
func (r *Registry) deleteSynthetic(name string) syscall.Errno {
	ev := r.findSynthetic(name)
	if ev == nil {
		return syscall.ENOENT
	}
	return r.freeProbe(ev.Probes[0])
}
