package events

import (
	"fmt"
	"syscall"

	"github.com/ktrace-dev/ktrace/filter"
)

// SetFilter gives the event ev (the one with ev's ID) its filter, nil for
// none; snapshots taken afterwards carry it.
func (r *Registry) SetFilter(ev *Event, f *filter.Filter) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if e := r.findEvent(ev.Group, ev.Name); e != nil && e.ID == ev.ID {
		if r.view != nil {
			r.view.of(e).filter = f
			return nil
		}
		e.Filter = f
		return nil
	}
	return &WriteError{Errno: syscall.ENODEV}
}

// SetFilterText parses expr against ev's format as the registry's kernel
// parses a write to the event's filter file, and gives ev the filter; on
// the kernel's error (a *filter.Error, wrapped) ev keeps the filter it had.
func (r *Registry) SetFilterText(ev *Event, expr string) error {
	fields, err := filter.FieldsFromFormat(ev.Format(), r.dialect.FilterCPUs)
	if err != nil {
		return fmt.Errorf("filter for %s/%s: %w", ev.Group, ev.Name, err)
	}
	f, ferr := filter.Parse(filter.StripEnds(expr), fields, r.filterEnv())
	if ferr != nil {
		return fmt.Errorf("filter for %s/%s: %s: %w", ev.Group, ev.Name, ferr.Message(), ferr)
	}
	return r.SetFilter(ev, f)
}

// filterEnv is the environment filters are parsed in: the registry's
// dialect, and its model's CPUs and symbols (for .function).
func (r *Registry) filterEnv() *filter.Env {
	env := &filter.Env{Dialect: r.dialect, CPUs: 1}
	if r.model != nil {
		env.CPUs, env.Symbols = r.model.CPUs(), r.model
	}
	return env
}
