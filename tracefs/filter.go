package tracefs

import (
	"syscall"

	"github.com/ktrace-dev/ktrace/filter"
	"github.com/ktrace-dev/ktrace/grammar"
)

// Event filters (events/GROUP/EVENT/filter and events/GROUP/filter): the
// filter package parses them against the event's format exactly as the
// kernel of the FS's release does; this file keeps each event's filter and
// gives the files the kernel's texts.

// maxFilterWrite is PAGE_SIZE: a filter write of this many bytes or more
// fails with EINVAL before anything is parsed.
const maxFilterWrite = 4096

// eventFilter is the filter state of one event.
type eventFilter struct {
	text     string         // the filter file's content
	compiled *filter.Filter // nil when the last write failed
}

// Filter returns the filter set on an event (nil when none, or when the
// last write failed: the kernel then filters nothing).
func (f *FS) Filter(group, name string) *filter.Filter {
	f.mu.Lock()
	defer f.mu.Unlock()
	for k, ef := range f.filters {
		if k.group == group && k.name == name {
			return ef.compiled
		}
	}
	return nil
}

// FilterSetter is implemented by backends that run event filters: after
// a filter write the FS hands each event concerned its compiled filter
// (nil: none, which is also what a failed write leaves).
type FilterSetter interface {
	SetFilter(group, name string, f *filter.Filter) error
}

// SetFilter keeps an event's filter on the registry's event, where the
// StaticFilterSetter is a backend that traces the kernel's static events
// and runs their filters.
type StaticFilterSetter interface {
	SetStaticFilter(group, name string, f *filter.Filter) error
}

// eBPF backend finds it when it attaches the event.
func (b *RegistryBackend) SetFilter(group, name string, f *filter.Filter) error {
	e := b.R.Event(group, name)
	if e == nil {
		return syscall.ENOENT
	}
	return b.R.SetFilter(e, f)
}

// SymbolSource is implemented by backends that can resolve kernel
// functions for ".function" filters.
type SymbolSource interface {
	FilterSymbols() filter.Symbols
}

// FilterSymbols resolves ".function" values with the registry's kernel
// model.
func (b *RegistryBackend) FilterSymbols() filter.Symbols {
	if m := b.R.Model(); m != nil {
		return m
	}
	return nil
}

// dialect is the difference-table row of the FS's release.
func (f *FS) dialect() *grammar.Dialect {
	for _, d := range grammar.Dialects() {
		if d.Name == f.texts.name {
			return d
		}
	}
	return grammar.Latest
}

// filterEnv is the parsing environment of the FS's kernel.
func (f *FS) filterEnv() *filter.Env {
	env := &filter.Env{Dialect: f.dialect(), CPUs: f.cpus}
	if s, ok := f.b.(SymbolSource); ok {
		env.Symbols = s.FilterSymbols()
	}
	return env
}

// compileFilter parses expr for the event group/name from its format.
func (f *FS) compileFilter(group, name, expr string, env *filter.Env) (*filter.Filter, *filter.Error) {
	format, ok := f.eventFormat(group, name)
	if !ok {
		return nil, &filter.Error{Errno: syscall.ENODEV}
	}
	ev, err := filter.FieldsFromFormat(format, env.Dialect.FilterCPUs)
	if err != nil {
		return nil, &filter.Error{Errno: syscall.EINVAL}
	}
	return filter.Parse(expr, ev, env)
}

// writeFilter is a write to an event's or a group's filter file. The
// whole write is one expression, trailing whitespace cut, leading kept;
// "0" (blanks around it allowed) removes the filter. An event's filter is
// replaced even when the new one fails: the event is then unfiltered, its
// file shows the error and error_log gets an entry, and the write fails
// with the kernel's errno. A group write applies the expression to each
// event of the group; the events it does not fit get the error "Couldn't
// find or set field in one of a subsystem's events" (one error_log entry
// each), and the write succeeds.
func (f *FS) writeFilter(n node, p []byte) (int, error) {
	if len(p) >= maxFilterWrite {
		return 0, syscall.EINVAL
	}
	text := filter.StripEnds(string(p))
	clear := filter.StripEnds(trimLeft(text)) == "0"
	env := f.filterEnv()
	var logs []LogEntry
	var failed *filter.Error
	var applyErr error
	apply := func(e EventInfo, flt *filter.Filter) {
		if e.Static {
			// A backend that traces static events runs their filters.
			if fs, ok := f.b.(StaticFilterSetter); ok {
				if err := fs.SetStaticFilter(e.Group, e.Name, flt); err != nil && applyErr == nil {
					applyErr = err
				}
			}
			return
		}
		if fs, ok := f.b.(FilterSetter); ok {
			if err := fs.SetFilter(e.Group, e.Name, flt); err != nil && applyErr == nil {
				applyErr = err
			}
		}
	}
	for _, e := range f.events() {
		if e.Group != n.group || (n.kind == nEvFilter && e.Name != n.event) {
			continue
		}
		k := eventKey{e.Group, e.Name, e.ID}
		if clear {
			f.mu.Lock()
			delete(f.filters, k)
			f.mu.Unlock()
			apply(e, nil)
			continue
		}
		flt, err := f.compileFilter(e.Group, e.Name, text, env)
		ef := &eventFilter{text: text + "\n", compiled: flt}
		if err != nil {
			if n.kind == nGroupFilter {
				err = &filter.Error{Code: grammar.FiltBadSubsysFilter, Pos: 0, Errno: err.Errno}
			}
			ef.text = err.Text(text) + "\n"
			logs = append(logs, LogEntry{Subsys: grammar.FilterSubsys, Msg: err.Message(), Cmd: text, Pos: err.LogPos()})
			failed = err
		}
		f.mu.Lock()
		f.filters[k] = ef
		f.mu.Unlock()
		apply(e, flt)
	}
	f.logErrors(logs)
	if failed != nil && n.kind == nEvFilter {
		return 0, failed.Errno
	}
	if applyErr != nil {
		// The backend could not run the filter (its eBPF program was
		// refused): the write fails rather than pretend it filters.
		return 0, grammar.ErrnoOf(applyErr)
	}
	return len(p), nil
}

// trimLeft drops leading whitespace as the kernel's strstrip does.
func trimLeft(s string) string {
	i := 0
	for i < len(s) && (s[i] == ' ' || (s[i] >= '\t' && s[i] <= '\r')) {
		i++
	}
	return s[i:]
}
