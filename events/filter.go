package events

import (
	"syscall"

	"github.com/ktrace-dev/ktrace/filter"
)

// SetFilter gives the event ev (the one with ev's ID) its filter, nil for
// none; snapshots taken afterwards carry it.
func (r *Registry) SetFilter(ev *Event, f *filter.Filter) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if e := r.findEvent(ev.Group, ev.Name); e != nil && e.ID == ev.ID {
		e.Filter = f
		return nil
	}
	return &WriteError{Errno: syscall.ENODEV}
}
