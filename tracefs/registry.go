package tracefs

import (
	"errors"
	"fmt"
	"syscall"

	"github.com/ktrace-dev/ktrace/events"
)

// RegistryBackend is the Backend of ktrace proper: the events package's
// registry, which creates, removes and reads back events exactly as the
// kernel's dynamic-event code does.
type RegistryBackend struct {
	R *events.Registry
}

// NewRegistryBackend wraps r.
func NewRegistryBackend(r *events.Registry) *RegistryBackend { return &RegistryBackend{R: r} }

// Write passes the registry's *WriteError on.
func (b *RegistryBackend) Write(f ControlFile, data []byte) (int, error) {
	n, err := b.R.Write(f, data)
	if err == nil {
		return n, nil
	}
	var we *WriteError
	if errors.As(err, &we) {
		return n, we
	}
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return n, &WriteError{Errno: errno}
	}
	return n, fmt.Errorf("write %s: %w", f, err)
}

func (b *RegistryBackend) Truncate(f ControlFile) error { return b.R.Truncate(f) }

func (b *RegistryBackend) Readback(f ControlFile) string { return b.R.Readback(f) }

func (b *RegistryBackend) Events() []EventInfo {
	evs := b.R.Events()
	order := map[string][]int{}
	for i, place := range b.R.ProbePlaces() {
		order[place] = append(order[place], i)
	}
	out := make([]EventInfo, 0, len(evs))
	for _, e := range evs {
		var paths []string
		for _, p := range e.Probes {
			if p.Uprobe != nil {
				paths = append(paths, p.Uprobe.Path)
			}
		}
		out = append(out, EventInfo{
			Group:     e.Group,
			Name:      e.Name,
			ID:        e.ID,
			Serial:    e.Serial,
			Enabled:   e.Enabled,
			Kprobe:    e.Kind == events.Kprobe || e.Kind == events.Kretprobe,
			Synthetic: e.Kind == events.Synthetic,
			Probes:    len(e.Probes),
			Hits:      e.Hits,
			Misses:    e.Misses,

			UprobePaths: paths,
			Order:       order[e.Group+"/"+e.Name],
		})
	}
	return out
}

func (b *RegistryBackend) Format(group, name string) (string, bool) {
	e := b.R.Event(group, name)
	if e == nil {
		return "", false
	}
	return e.Format(), true
}

func (b *RegistryBackend) SetEnabled(group, name string, on bool) error {
	e := b.R.Event(group, name)
	if e == nil {
		return syscall.ENOENT
	}
	return b.R.SetEnabled(e, on)
}
