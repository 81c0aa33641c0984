package export

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Prometheus serves the tracer's counters for scraping, at /metrics:
// ktrace_event_hits_total and ktrace_event_misses_total per event,
// ktrace_events_lost_total per reason, ktrace_export_dropped_total per
// reason (with an OTLP exporter), and the Go runtime's and the process's
// own metrics. Values are read at each scrape.
type Prometheus struct {
	srv  *http.Server
	addr net.Addr
	mu   sync.Mutex
	read CountsFunc
	exp  *Exporter
	done chan struct{}
}

var (
	promHits    = prometheus.NewDesc("ktrace_event_hits_total", "Probe hits per event (kprobe_profile's hit count).", []string{"event"}, nil)
	promMisses  = prometheus.NewDesc("ktrace_event_misses_total", "Hits per event whose record the full ring buffer refused (kprobe_profile's miss count).", []string{"event"}, nil)
	promLost    = prometheus.NewDesc("ktrace_events_lost_total", "Events lost: refused by the full ring buffer, or undecodable.", []string{"reason"}, nil)
	promDropped = prometheus.NewDesc("ktrace_export_dropped_total", "Log records the OTLP exporter dropped: queue full, or export failed.", []string{"reason"}, nil)
)

// ServeMetrics listens on addr (HOST:PORT) and serves the metrics until
// Close. exp, when not nil, adds its dropped counts.
func ServeMetrics(addr string, exp *Exporter) (*Prometheus, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	p := &Prometheus{addr: l.Addr(), exp: exp, done: make(chan struct{})}
	reg := prometheus.NewRegistry()
	reg.MustRegister(p, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError}))
	p.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		defer close(p.done)
		p.srv.Serve(l)
	}()
	return p, nil
}

// Addr is the address the metrics are served on.
func (p *Prometheus) Addr() net.Addr { return p.addr }

// SetCounts gives the server the tracer's counters; f must keep
// answering until Close.
func (p *Prometheus) SetCounts(f CountsFunc) {
	p.mu.Lock()
	p.read = f
	p.mu.Unlock()
}

// Close stops serving.
func (p *Prometheus) Close() error {
	err := p.srv.Close()
	<-p.done
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

// Describe is prometheus.Collector's.
func (p *Prometheus) Describe(ch chan<- *prometheus.Desc) {
	ch <- promHits
	ch <- promMisses
	ch <- promLost
	if p.exp != nil {
		ch <- promDropped
	}
}

// Collect is prometheus.Collector's: the counters now.
func (p *Prometheus) Collect(ch chan<- prometheus.Metric) {
	if p.exp != nil {
		st := p.exp.Stats()
		ch <- prometheus.MustNewConstMetric(promDropped, prometheus.CounterValue, float64(st.QueueFull), "queue_full")
		ch <- prometheus.MustNewConstMetric(promDropped, prometheus.CounterValue, float64(st.Failed), "export_failed")
	}
	p.mu.Lock()
	read := p.read
	p.mu.Unlock()
	if read == nil {
		return
	}
	c, err := read()
	if err != nil {
		ch <- prometheus.NewInvalidMetric(promHits, err)
		return
	}
	var miss uint64
	for _, ev := range c.Events {
		ch <- prometheus.MustNewConstMetric(promHits, prometheus.CounterValue, float64(ev.Hits), ev.Name)
		ch <- prometheus.MustNewConstMetric(promMisses, prometheus.CounterValue, float64(ev.Misses), ev.Name)
		miss += ev.Misses
	}
	ch <- prometheus.MustNewConstMetric(promLost, prometheus.CounterValue, float64(miss), "ring_buffer_full")
	ch <- prometheus.MustNewConstMetric(promLost, prometheus.CounterValue, float64(c.Undecodable), "undecodable")
}
