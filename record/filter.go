package record

import (
	"fmt"
	"strings"

	"github.com/ktrace-dev/ktrace/bpfcode"
	"github.com/ktrace-dev/ktrace/events"
	"github.com/ktrace-dev/ktrace/filter"
	"github.com/ktrace-dev/ktrace/grammar"
	"github.com/ktrace-dev/ktrace/kernel"
)

// FilterError is a filter an event cannot take: the kernel's error for
// that event, as error_log would show it.
type FilterError struct {
	Event string // GROUP/EVENT
	Expr  string
	Err   *filter.Error
}

func (e *FilterError) Error() string {
	return fmt.Sprintf("filter for %s: %s", e.Event, e.Err.Message())
}

// LogText is the error_log entry the kernel writes for the failed filter.
func (e *FilterError) LogText() string {
	return fmt.Sprintf("%s: error: %s\n  Command: %s\n%s^\n", grammar.FilterSubsys, e.Err.Message(), e.Expr,
		strings.Repeat(" ", len("  Command: ")+e.Err.LogPos()))
}

// SetFilters parses expr against each event's format, as the kernel of
// dialect d parses a write to its filter file, and gives each event the
// filter; the first event that cannot take it fails with the kernel's
// error and no event is changed. An expression of "0" clears the filters.
func SetFilters(evs []*events.Event, expr string, m *kernel.Model, d *grammar.Dialect) error {
	text := filter.StripEnds(expr)
	if strings.TrimSpace(text) == "0" {
		for _, ev := range evs {
			ev.Filter = nil
		}
		return nil
	}
	env := &filter.Env{Dialect: d, CPUs: 1}
	if m != nil {
		env.CPUs, env.Symbols = m.CPUs(), m
	}
	out := make([]*filter.Filter, len(evs))
	for i, ev := range evs {
		fields, err := filter.FieldsFromFormat(ev.Format(), d.FilterCPUs)
		if err != nil {
			return fmt.Errorf("filter for %s/%s: %w", ev.Group, ev.Name, err)
		}
		f, ferr := filter.Parse(text, fields, env)
		if ferr != nil {
			return &FilterError{Event: ev.Group + "/" + ev.Name, Expr: text, Err: ferr}
		}
		if err := bpfcode.CheckFilter(f); err != nil {
			return fmt.Errorf("filter for %s/%s: %w", ev.Group, ev.Name, err)
		}
		out[i] = f
	}
	for i, ev := range evs {
		ev.Filter = out[i]
	}
	return nil
}
