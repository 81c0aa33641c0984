package export

import (
	"context"
	"fmt"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
)

// EventCount is one event's kernel-side counters, as kprobe_profile
// shows them: hits, and misses (records the full ring buffer refused).
type EventCount struct {
	Name         string // GROUP/EVENT
	Hits, Misses uint64
}

// Counts is a snapshot of the tracer's counters.
type Counts struct {
	Events []EventCount
	// Undecodable counts records the decoder refused.
	Undecodable uint64
}

// CountsFunc reads the tracer's counters; it is called from the metric
// reader's goroutine.
type CountsFunc func() (Counts, error)

// The metric names, shared with the Prometheus endpoint (which adds
// _total to the counters).
const (
	MetricHits    = "ktrace.event.hits"
	MetricMisses  = "ktrace.event.misses"
	MetricLost    = "ktrace.events.lost"
	MetricDropped = "ktrace.export.dropped"
)

// meters exports the counters as OTLP monotonic sums.
type meters struct {
	provider *sdkmetric.MeterProvider
	exp      *Exporter
	mu       sync.Mutex
	counts   CountsFunc
}

// newMeters starts the metric exporter that OTEL_EXPORTER_OTLP_* select,
// with the SDK's periodic reader (OTEL_METRIC_EXPORT_INTERVAL).
func newMeters(ctx context.Context, res *resource.Resource, e *Exporter) (*meters, error) {
	proto, err := protocol("METRICS")
	if err != nil {
		return nil, err
	}
	var exp sdkmetric.Exporter
	if proto == "grpc" {
		exp, err = otlpmetricgrpc.New(ctx)
	} else {
		exp, err = otlpmetrichttp.New(ctx)
	}
	if err != nil {
		return nil, fmt.Errorf("OTLP metric exporter (%s): %w", proto, err)
	}
	m := &meters{exp: e}
	m.provider = sdkmetric.NewMeterProvider(
		sdkmetric.WithResource(res),
		sdkmetric.WithReader(sdkmetric.NewPeriodicReader(exp)))
	if err := m.register(m.provider.Meter("github.com/ktrace-dev/ktrace")); err != nil {
		m.provider.Shutdown(ctx)
		return nil, err
	}
	return m, nil
}

// register makes the observable counters and their callback.
func (m *meters) register(meter metric.Meter) error {
	hits, err := meter.Int64ObservableCounter(MetricHits, metric.WithUnit("{hit}"),
		metric.WithDescription("Probe hits per event (kprobe_profile's hit count)."))
	if err != nil {
		return err
	}
	misses, err := meter.Int64ObservableCounter(MetricMisses, metric.WithUnit("{event}"),
		metric.WithDescription("Hits per event whose record the full ring buffer refused (kprobe_profile's miss count)."))
	if err != nil {
		return err
	}
	lost, err := meter.Int64ObservableCounter(MetricLost, metric.WithUnit("{event}"),
		metric.WithDescription("Events lost: refused by the full ring buffer, or undecodable."))
	if err != nil {
		return err
	}
	dropped, err := meter.Int64ObservableCounter(MetricDropped, metric.WithUnit("{record}"),
		metric.WithDescription("Log records the exporter dropped: queue full, or export failed."))
	if err != nil {
		return err
	}
	_, err = meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		st := m.exp.Stats()
		o.ObserveInt64(dropped, int64(st.QueueFull), metric.WithAttributes(attribute.String("reason", "queue_full")))
		o.ObserveInt64(dropped, int64(st.Failed), metric.WithAttributes(attribute.String("reason", "export_failed")))
		m.mu.Lock()
		counts := m.counts
		m.mu.Unlock()
		if counts == nil {
			return nil
		}
		c, err := counts()
		if err != nil {
			return err
		}
		var miss uint64
		for _, ev := range c.Events {
			attr := metric.WithAttributes(attribute.String("event", ev.Name))
			o.ObserveInt64(hits, int64(ev.Hits), attr)
			o.ObserveInt64(misses, int64(ev.Misses), attr)
			miss += ev.Misses
		}
		o.ObserveInt64(lost, int64(miss), metric.WithAttributes(attribute.String("reason", "ring_buffer_full")))
		o.ObserveInt64(lost, int64(c.Undecodable), metric.WithAttributes(attribute.String("reason", "undecodable")))
		return nil
	}, hits, misses, lost, dropped)
	return err
}

func (m *meters) shutdown(ctx context.Context) error {
	return m.provider.Shutdown(ctx)
}

// SetCounts gives the exporter the tracer's counters, for the metrics;
// f must keep answering (with the final counts) until Shutdown returns.
func (e *Exporter) SetCounts(f CountsFunc) {
	if e.metrics == nil {
		return
	}
	e.metrics.mu.Lock()
	e.metrics.counts = f
	e.metrics.mu.Unlock()
}
