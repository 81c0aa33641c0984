package export

import (
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
)

// scrape GETs /metrics and returns the samples: "name{labels}" -> value
// text.
func scrape(t *testing.T, addr string) map[string]string {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("scrape: %s %v", resp.Status, err)
	}
	out := map[string]string{}
	for _, l := range strings.Split(string(body), "\n") {
		if l == "" || l[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(l, ' ')
		out[l[:i]] = l[i+1:]
	}
	return out
}

// TestPrometheus scrapes the metrics endpoint twice while the counters
// move and checks every per-event and lost sample.
func TestPrometheus(t *testing.T) {
	p, err := ServeMetrics("127.0.0.1:0", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	var hits atomic.Uint64
	hits.Store(5)
	p.SetCounts(func() (Counts, error) {
		return Counts{Events: []EventCount{{"kprobes/myprobe", hits.Load(), 2}, {"kprobes/rev", 1, 0}}, Undecodable: 3}, nil
	})
	want := map[string]string{
		`ktrace_event_hits_total{event="kprobes/myprobe"}`:    "5",
		`ktrace_event_misses_total{event="kprobes/myprobe"}`:  "2",
		`ktrace_event_hits_total{event="kprobes/rev"}`:        "1",
		`ktrace_event_misses_total{event="kprobes/rev"}`:      "0",
		`ktrace_events_lost_total{reason="ring_buffer_full"}`: "2",
		`ktrace_events_lost_total{reason="undecodable"}`:      "3",
	}
	check := func() {
		got := scrape(t, p.Addr().String())
		for k, v := range want {
			if got[k] != v {
				t.Errorf("%s = %q, want %q", k, got[k], v)
			}
		}
		if _, ok := got[`ktrace_export_dropped_total{reason="queue_full"}`]; ok {
			t.Errorf("dropped records served without an exporter")
		}
		if _, ok := got["go_goroutines"]; !ok {
			t.Errorf("no Go runtime metrics")
		}
	}
	check()
	hits.Store(1234567)
	want[`ktrace_event_hits_total{event="kprobes/myprobe"}`] = "1.234567e+06"
	check()
}

// TestPrometheusAddrInUse: a taken address is an error at start, before
// anything is traced.
func TestPrometheusAddrInUse(t *testing.T) {
	p, err := ServeMetrics("127.0.0.1:0", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if _, err := ServeMetrics(p.Addr().String(), nil); err == nil || !strings.Contains(err.Error(), "address already in use") {
		t.Fatalf("second listener on %s: %v", p.Addr(), err)
	}
}
