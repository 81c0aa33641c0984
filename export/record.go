package export

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/ktrace-dev/ktrace/record"
	"github.com/ktrace-dev/ktrace/tracer"
)

// RecordCounts reads a recording's counters (record.Options.Counters) as
// the exporter's metrics take them.
func RecordCounts(read func() (record.Counts, error)) CountsFunc {
	return func() (Counts, error) {
		c, err := read()
		if err != nil {
			return Counts{}, err
		}
		out := Counts{Undecodable: c.Undecodable}
		for _, e := range c.Events {
			out.Events = append(out.Events, EventCount{Name: e.Name, Hits: e.Hits, Misses: e.Misses})
		}
		return out, nil
	}
}

// WriteText writes the exporter's line of `ktrace record`'s summary, and
// the last export error.
func (s Stats) WriteText(w io.Writer) {
	fmt.Fprintf(w, "ktrace: export: %d log records exported, %d dropped (%d queue full, %d export failed)\n",
		s.Exported, s.Dropped(), s.QueueFull, s.Failed)
	if s.LastErr != nil {
		fmt.Fprintf(w, "ktrace: export: last error: %v\n", s.LastErr)
	}
}

// FlushTime bounds the export of what is queued when recording stops.
const FlushTime = 5 * time.Second

// Sinks are where `ktrace record` sends its events and counters besides
// its output: an OTLP exporter (--export otlp) and a Prometheus endpoint
// (--metrics-addr), either or both absent.
type Sinks struct {
	exp  *Exporter
	prom *Prometheus
}

// OpenSinks starts the sinks: exporter "" (none) or "otlp", and a
// Prometheus endpoint on metricsAddr ("" for none). Its errors name the
// flag at fault.
func OpenSinks(ctx context.Context, exporter, metricsAddr string) (*Sinks, error) {
	s := &Sinks{}
	switch exporter {
	case "":
	case "otlp":
		exp, err := New(ctx, Config{Metrics: true})
		if err != nil {
			return nil, fmt.Errorf("--export otlp: %w", err)
		}
		s.exp = exp
	default:
		return nil, fmt.Errorf("--export %q: the one exporter is otlp", exporter)
	}
	if metricsAddr != "" {
		prom, err := ServeMetrics(metricsAddr, s.exp)
		if err != nil {
			if s.exp != nil {
				s.exp.Shutdown(context.Background())
			}
			return nil, fmt.Errorf("--metrics-addr: %w", err)
		}
		s.prom = prom
	}
	return s, nil
}

// Feed makes the recording o describes feed the sinks: its events to the
// exporter, its counters to both.
func (s *Sinks) Feed(o *record.Options) {
	o.Export = s.Events()
	if s.exp != nil || s.prom != nil {
		o.Counters = s.SetCounts
	}
}

// Events is the exporter's Event (nil without an exporter), for a
// recorder other than record's (the live backend of a mount); its calls
// must not overlap.
func (s *Sinks) Events() func(*tracer.Decoder, *tracer.Record) {
	if s.exp == nil {
		return nil
	}
	return s.exp.Event
}

// SetCounts gives both sinks the counters read reads.
func (s *Sinks) SetCounts(read func() (record.Counts, error)) {
	if s.exp != nil {
		s.exp.SetCounts(RecordCounts(read))
	}
	if s.prom != nil {
		s.prom.SetCounts(RecordCounts(read))
	}
}

// Flush ends the exporter: what is still queued gets FlushTime to reach
// the collector, then it is dropped, and counted. report writes the
// exporter's lines of the summary (nothing without an exporter).
func (s *Sinks) Flush() (report func(w io.Writer)) {
	if s.exp == nil {
		return func(io.Writer) {}
	}
	ctx, cancel := context.WithTimeout(context.Background(), FlushTime)
	st, err := s.exp.Shutdown(ctx)
	cancel()
	return func(w io.Writer) {
		st.WriteText(w)
		if err != nil {
			fmt.Fprintf(w, "ktrace: %v\n", err)
		}
	}
}

// Close closes the Prometheus endpoint.
func (s *Sinks) Close() {
	if s.prom != nil {
		s.prom.Close()
	}
}
