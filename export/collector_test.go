package export

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	colmetricspb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	logspb "go.opentelemetry.io/proto/otlp/logs/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/ktrace-dev/ktrace/fetchargs"
	"github.com/ktrace-dev/ktrace/internal/vmtest"
	"github.com/ktrace-dev/ktrace/record"
	"github.com/ktrace-dev/ktrace/tracer"
)

// The OpenTelemetry Collector the tests export to is export/otelcol, a Go
// module of its own (the collector's modules stay out of ktrace's): the
// OTLP receiver and the file exporter. It is built once per test binary,
// static (it also runs in the VM guests), into .cache/otelcol/ under the
// module root, named by a hash of its sources and the Go version, and
// reused while that build is there.
var (
	collectorOnce sync.Once
	collectorBin  string
	collectorErr  error
)

// collectorBinary returns the path of the built collector.
func collectorBinary(t testing.TB) string {
	t.Helper()
	collectorOnce.Do(func() { collectorBin, collectorErr = buildCollector() })
	if collectorErr != nil {
		t.Fatal(collectorErr)
	}
	return collectorBin
}

func buildCollector() (string, error) {
	root, err := vmtest.ModuleRoot()
	if err != nil {
		return "", err
	}
	src := filepath.Join(root, "export", "otelcol")
	h := sha256.New()
	fmt.Fprintln(h, runtime.Version())
	for _, f := range []string{"main.go", "go.mod", "go.sum"} {
		b, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			return "", fmt.Errorf("collector source: %w", err)
		}
		fmt.Fprintf(h, "%s %d\n", f, len(b))
		h.Write(b)
	}
	dir := filepath.Join(root, ".cache", "otelcol")
	bin := filepath.Join(dir, "ktrace-otelcol-"+hex.EncodeToString(h.Sum(nil))[:16])
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("collector build: %w", err)
	}
	tmp := fmt.Sprintf("%s.tmp%d", bin, os.Getpid())
	cmd := exec.Command("go", "build", "-trimpath", "-buildvcs=false", "-ldflags=-s -w", "-o", tmp, ".")
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64")
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	start := time.Now()
	if err := cmd.Run(); err != nil {
		os.Remove(tmp)
		return "", fmt.Errorf("collector build (go build in %s; `go mod download` there fetches its modules): %w\n%s", src, err, stderr.String())
	}
	if err := os.Rename(tmp, bin); err != nil {
		return "", fmt.Errorf("collector build: %w", err)
	}
	// Earlier builds are stale.
	old, _ := filepath.Glob(filepath.Join(dir, "ktrace-otelcol-*"))
	for _, o := range old {
		if o != bin {
			os.Remove(o)
		}
	}
	fmt.Fprintf(os.Stderr, "export: built the collector in %.0fs: %s\n", time.Since(start).Seconds(), bin)
	return bin, nil
}

// collectorConfig is the collector's configuration: the OTLP/gRPC
// receiver on addr, every log and metric request written as a line of
// OTLP/JSON to out; no telemetry of its own (it would take a port).
func collectorConfig(addr, out string) string {
	return fmt.Sprintf(`receivers:
  otlp:
    protocols:
      grpc:
        endpoint: %s
exporters:
  file:
    path: %s
    flush_interval: 100ms
service:
  telemetry:
    metrics:
      level: none
    logs:
      level: warn
  pipelines:
    logs:
      receivers: [otlp]
      exporters: [file]
    metrics:
      receivers: [otlp]
      exporters: [file]
`, addr, out)
}

// collector is a running collector process.
type collector struct {
	cmd  *exec.Cmd
	addr string
	out  string
	log  *bytes.Buffer
	done chan struct{}
}

// freeAddr is a loopback address nothing listens on.
func freeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// startCollector runs the collector with the OTLP/gRPC receiver on addr,
// writing to out, and waits until it accepts connections.
func startCollector(t testing.TB, addr, out string) *collector {
	t.Helper()
	bin := collectorBinary(t)
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(cfg, []byte(collectorConfig(addr, out)), 0o644); err != nil {
		t.Fatal(err)
	}
	c := &collector{addr: addr, out: out, log: &bytes.Buffer{}, done: make(chan struct{})}
	c.cmd = exec.Command(bin, "--config", "file:"+cfg)
	c.cmd.Stdout, c.cmd.Stderr = c.log, c.log
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { c.cmd.Wait(); close(c.done) }()
	t.Cleanup(func() { c.stop(t, syscall.SIGKILL) })
	deadline := time.Now().Add(30 * time.Second)
	for {
		conn, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			conn.Close()
			return c
		}
		select {
		case <-c.done:
			t.Fatalf("the collector exited: %v\n%s", c.cmd.ProcessState, c.log)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the collector does not listen on %s after 30 s:\n%s", addr, c.log)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// stop signals the collector and waits for it to exit.
func (c *collector) stop(t testing.TB, sig syscall.Signal) {
	select {
	case <-c.done:
		return
	default:
	}
	c.cmd.Process.Signal(sig)
	select {
	case <-c.done:
	case <-time.After(30 * time.Second):
		c.cmd.Process.Kill()
		<-c.done
		t.Errorf("the collector did not exit on %v within 30 s:\n%s", sig, c.log)
	}
}

// collected is what the collector wrote: every logs and metrics request.
type collected struct {
	logs    []*logspb.ResourceLogs
	metrics []*metricspb.ResourceMetrics
}

// readCollected reads the file exporter's output: one OTLP/JSON request
// a line.
func readCollected(t testing.TB, path string) collected {
	t.Helper()
	var c collected
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("the collector's output: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 64<<20)
	u := protojson.UnmarshalOptions{DiscardUnknown: true}
	for sc.Scan() {
		l := sc.Bytes()
		switch {
		case bytes.HasPrefix(l, []byte(`{"resourceLogs"`)):
			var req collogspb.ExportLogsServiceRequest
			if err := u.Unmarshal(l, &req); err != nil {
				t.Fatalf("the collector's output: %v\n%.500s", err, l)
			}
			c.logs = append(c.logs, req.ResourceLogs...)
		case bytes.HasPrefix(l, []byte(`{"resourceMetrics"`)):
			var req colmetricspb.ExportMetricsServiceRequest
			if err := u.Unmarshal(l, &req); err != nil {
				t.Fatalf("the collector's output: %v\n%.500s", err, l)
			}
			c.metrics = append(c.metrics, req.ResourceMetrics...)
		case len(bytes.TrimSpace(l)) > 0:
			t.Fatalf("the collector's output: a line that is no request: %.500s", l)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("the collector's output: %v", err)
	}
	return c
}

// arrival is one log record the collector received.
type arrival struct {
	host  string // the resource's host.name
	rec   *logspb.LogRecord
	res   map[string]any
	attrs map[string]any
}

// records returns every log record received, by body.
func (c collected) records() map[string][]arrival {
	out := map[string][]arrival{}
	for _, rl := range c.logs {
		res := map[string]any{}
		for _, kv := range rl.GetResource().GetAttributes() {
			res[kv.Key] = anyValue(kv.Value)
		}
		host, _ := res["host.name"].(string)
		for _, sl := range rl.ScopeLogs {
			for _, lr := range sl.LogRecords {
				attrs := map[string]any{}
				for _, kv := range lr.Attributes {
					attrs[kv.Key] = anyValue(kv.Value)
				}
				b := lr.Body.GetStringValue()
				out[b] = append(out[b], arrival{host: host, rec: lr, res: res, attrs: attrs})
			}
		}
	}
	return out
}

// lastCounts returns the last value of each counter, keyed "HOST METRIC
// ATTR=VALUE...".
func (c collected) lastCounts() map[string]int64 {
	out := map[string]int64{}
	for _, rm := range c.metrics {
		host := ""
		for _, kv := range rm.GetResource().GetAttributes() {
			if kv.Key == "host.name" {
				host = kv.Value.GetStringValue()
			}
		}
		for _, sm := range rm.ScopeMetrics {
			for _, m := range sm.Metrics {
				for _, dp := range m.GetSum().GetDataPoints() {
					key := host + " " + m.Name
					for _, kv := range dp.Attributes {
						key += fmt.Sprintf(" %s=%v", kv.Key, anyValue(kv.Value))
					}
					out[key] = dp.GetAsInt()
				}
			}
		}
	}
	return out
}

// hostRecords returns n distinct records of the test events for host
// number host (its pids, paths and times are its own), and the attributes
// each must carry, typed by hand as in testRecords.
func hostRecords(t testing.TB, w *world, host, n int) ([]tracer.Record, []map[string]any) {
	open, vread, ksys := w.addr(t, "do_sys_openat2"), w.addr(t, "vfs_read"), w.addr(t, "ksys_read")
	jiffies := w.addr(t, "jiffies")
	sym := symText(t, w.m, jiffies)
	var recs []tracer.Record
	var want []map[string]any
	// A record ends with its last string, as the ring buffer holds it
	// (the queue's bound is in bytes).
	decode := func(s *sample) tracer.Record {
		s.buf = s.buf[:fetchargs.HeaderSize+s.dyn]
		return w.decode(t, s)
	}
	for i := 0; i < n; i++ {
		ts := uint64(host)*1e12 + uint64(i)*1000 + 1e9
		pid := int32(1000*host + i%97)
		cpu := uint32(i % 2)
		switch i % 3 {
		case 0:
			path := fmt.Sprintf("/srv/host%d/f%d", host, i)
			dfd := int64(i%5) - 2
			recs = append(recs, decode(w.sample(t, "myprobe", ts, cpu, "cat", pid, pid, open, 0).
				num(0, 0, uint64(uint32(int32(dfd)))).str(1, 0, path, false).num(2, 0, uint64(i))))
			want = append(want, map[string]any{"event": "kprobes/myprobe", "comm": "cat", "pid": int64(pid), "tgid": int64(pid), "cpu": int64(cpu),
				"dfd": dfd, "path": path, "flags": int64(i)})
		case 1:
			s := fmt.Sprintf("s%d", i)
			recs = append(recs, decode(w.sample(t, "arr", ts, cpu, "ls", pid, pid, vread, 0).
				num(0, 0, uint64(i%256)).num(0, 1, uint64(host)).num(0, 2, 7).num(1, 0, 'a'+uint64(i%26)).
				str(2, 0, s, false).str(2, 1, "", true).num(3, 0, jiffies).num(4, 0, uint64(i)).num(5, 0, uint64(i)<<32)))
			want = append(want, map[string]any{"event": "kprobes/arr", "comm": "ls", "pid": int64(pid), "tgid": int64(pid), "cpu": int64(cpu),
				"a": []any{int64(i % 256), int64(host), int64(7)}, "c": string(rune('a' + i%26)), "s": []any{s, nil},
				"sym": sym, "arg.pid": int64(i), "big": int64(i) << 32})
		default:
			recs = append(recs, decode(w.sample(t, "rev", ts, cpu, "sh", pid, pid-1, vread, ksys+0x6c).num(0, 0, uint64(-int64(i)))))
			want = append(want, map[string]any{"event": "kprobes/rev", "comm": "sh", "pid": int64(pid), "tgid": int64(pid - 1), "cpu": int64(cpu),
				"arg1": -int64(i)})
		}
	}
	return recs, want
}

// exportHostEnv makes TestExportHost run: "HOST N", the host number
// and the number of records.
const exportHostEnv = "KTRACE_EXPORT_HOST"

// TestExportHost is a ktrace process exporting known records (this
// package's test binary, re-executed with KTRACE_EXPORT_HOST set), as
// `ktrace record --export otlp` does: the sinks it opens, configured only
// by the OTEL_* variables, take each record after its text line is
// written, the recording's counters besides, and are flushed at the end.
// The text output goes to stdout, record's summary line of the export to
// stderr. Elsewhere it is skipped.
func TestExportHost(t *testing.T) {
	spec := os.Getenv(exportHostEnv)
	if spec == "" {
		t.Skip("runs as TestCollector's exporting process only")
	}
	var host, n int
	if _, err := fmt.Sscan(spec, &host, &n); err != nil {
		t.Fatalf("%s=%q: %v", exportHostEnv, spec, err)
	}
	w := newWorld(t, testLines...)
	recs, _ := hostRecords(t, w, host, n)
	sinks, err := OpenSinks(context.Background(), "otlp", "")
	if err != nil {
		t.Fatal(err)
	}
	var o record.Options
	sinks.Feed(&o)
	var mu sync.Mutex
	hits := map[string]uint64{}
	// The recording's counters: besides the records printed, the ring
	// buffer refused HOST hits of myprobe, and HOST more could not be
	// decoded.
	o.Counters(func() (record.Counts, error) {
		mu.Lock()
		defer mu.Unlock()
		c := record.Counts{Undecodable: uint64(host)}
		for _, name := range []string{"kprobes/myprobe", "kprobes/arr", "kprobes/rev"} {
			ev := record.EventCount{Name: name, Hits: hits[name]}
			if name == "kprobes/myprobe" {
				ev.Hits += 2 * uint64(host)
				ev.Misses = uint64(host)
			}
			c.Events = append(c.Events, ev)
		}
		return c, nil
	})
	out := bufio.NewWriter(os.Stdout)
	for i := range recs {
		out.Write(w.dec.AppendText(out.AvailableBuffer(), &recs[i]))
		mu.Lock()
		hits[recs[i].Probe.Event.Group+"/"+recs[i].Probe.Event.Name]++
		mu.Unlock()
		o.Export(w.dec, &recs[i])
	}
	if err := out.Flush(); err != nil {
		t.Fatal(err)
	}
	sinks.Flush()(os.Stderr)
	sinks.Close()
}

// exportSummary is record's summary line of the export.
var exportSummary = regexp.MustCompile(`ktrace: export: (\d+) log records exported, (\d+) dropped \((\d+) queue full, (\d+) export failed\)`)

// TestCollector runs a real OpenTelemetry Collector (export/otelcol: the
// OTLP receiver, the file exporter) and several ktrace processes
// exporting to it at once, each standing for a host of its own
// (OTEL_RESOURCE_ATTRIBUTES=host.name=...), configured only by the
// OTEL_EXPORTER_OTLP_* variables: every line of each process's text
// output reaches the collector's file once, under that host, as the body
// of a log record with the typed attributes of its event, and the
// counters the collector got as metrics are each host's: the hits of the
// lines it printed and of the records it lost, the misses, the lost and
// the dropped records.
func TestCollector(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the collector; skipped in -short mode")
	}
	const hosts, n = 4, 3000
	dir := t.TempDir()
	out := filepath.Join(dir, "out.json")
	c := startCollector(t, freeAddr(t), out)
	type proc struct {
		cmd            *exec.Cmd
		stdout, stderr bytes.Buffer
	}
	var procs []*proc
	for h := 1; h <= hosts; h++ {
		p := &proc{cmd: exec.Command(os.Args[0], "-test.run", "^TestExportHost$", "-test.count=1")}
		p.cmd.Env = append(os.Environ(),
			fmt.Sprintf("%s=%d %d", exportHostEnv, h, n),
			"OTEL_EXPORTER_OTLP_ENDPOINT=http://"+c.addr,
			"OTEL_EXPORTER_OTLP_PROTOCOL=grpc",
			fmt.Sprintf("OTEL_RESOURCE_ATTRIBUTES=host.name=node-%d,k8s.cluster.name=prod", h),
			// The queue holds the whole run: this reader is faster than
			// any ring buffer, and nothing may be dropped here.
			fmt.Sprintf("OTEL_BLRP_MAX_QUEUE_SIZE=%d", n),
			"OTEL_BLRP_SCHEDULE_DELAY=100",
			"OTEL_METRIC_EXPORT_INTERVAL=500")
		p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
		if err := p.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		procs = append(procs, p)
	}
	for h, p := range procs {
		if err := p.cmd.Wait(); err != nil {
			t.Fatalf("host %d: %v\n%s", h+1, err, p.stderr.String())
		}
	}
	// The processes have flushed: what the collector acknowledged it
	// writes out when it stops.
	c.stop(t, syscall.SIGTERM)
	got := readCollected(t, out)
	bodies := got.records()
	counts := got.lastCounts()
	w := newWorld(t, testLines...)
	total := 0
	for i, p := range procs {
		h := i + 1
		host := fmt.Sprintf("node-%d", h)
		m := exportSummary.FindStringSubmatch(p.stderr.String())
		if m == nil || m[1] != strconv.Itoa(n) || m[2] != "0" {
			t.Errorf("%s: want %d exported, none dropped; the summary:\n%s", host, n, p.stderr.String())
		}
		recs, want := hostRecords(t, w, h, n)
		lines := strings.Split(strings.TrimSuffix(p.stdout.String(), "\n"), "\n")
		// The test binary's own verdict ends the output.
		for len(lines) > 0 && !strings.Contains(lines[len(lines)-1], ": (") {
			lines = lines[:len(lines)-1]
		}
		if len(lines) != n {
			t.Fatalf("%s printed %d lines, want %d:\n%s", host, len(lines), n, p.stdout.String())
		}
		printed := map[string]uint64{}
		bad := 0
		for j, l := range lines {
			if wl := string(w.dec.AppendText(nil, &recs[j])); l != strings.TrimSuffix(wl, "\n") {
				t.Fatalf("%s line %d %q, want %q", host, j, l, wl)
			}
			printed[want[j]["event"].(string)]++
			a := bodies[l]
			if len(a) != 1 || a[0].host != host {
				var hs []string
				for _, x := range a {
					hs = append(hs, x.host)
				}
				t.Errorf("%s: %q received %d times (hosts %v)", host, l, len(a), hs)
			} else if !reflect.DeepEqual(a[0].attrs, want[j]) {
				t.Errorf("%s: %q attributes\n got %v\nwant %v", host, l, a[0].attrs, want[j])
			} else if a[0].rec.EventName != want[j]["event"] || a[0].res["service.name"] != "ktrace" || a[0].res["k8s.cluster.name"] != "prod" || a[0].rec.TimeUnixNano == 0 {
				t.Errorf("%s: %q event name %q, time %d, resource %v", host, l, a[0].rec.EventName, a[0].rec.TimeUnixNano, a[0].res)
			} else {
				continue
			}
			if bad++; bad > 10 {
				t.Fatalf("%s: more than 10 lines wrong", host)
			}
		}
		total += len(lines)
		// The counters TestExportHost's recording kept.
		wantCounts := map[string]int64{
			MetricLost + " reason=ring_buffer_full": int64(h),
			MetricLost + " reason=undecodable":      int64(h),
			MetricDropped + " reason=queue_full":    0,
			MetricDropped + " reason=export_failed": 0,
		}
		for ev, k := range printed {
			wantCounts[MetricHits+" event="+ev] = int64(k)
			wantCounts[MetricMisses+" event="+ev] = 0
		}
		wantCounts[MetricHits+" event=kprobes/myprobe"] += 2 * int64(h)
		wantCounts[MetricMisses+" event=kprobes/myprobe"] = int64(h)
		for key, v := range wantCounts {
			if got, ok := counts[host+" "+key]; !ok || got != v {
				t.Errorf("%s: %s = %d (received: %v), want %d", host, key, got, ok, v)
			}
		}
	}
	received := 0
	for _, a := range bodies {
		received += len(a)
	}
	if received != total {
		t.Errorf("the collector received %d log records for %d lines printed", received, total)
	}
	t.Logf("%d hosts, %d text lines, %d log records in %d resource logs, %d resource metrics", hosts, total, received, len(got.logs), len(got.metrics))
}

// TestCollectorKilled stops the collector in the middle of a run and
// starts it again: only counted records are lost (exported and dropped
// add up to the records given, and the collector wrote exactly the
// exported ones, none twice), the export resumes with the new collector,
// which gets the dropped count as a metric, and Event is not slowed while
// the collector is down: feeding the same bursts takes at most a few
// times as long as with the collector up. The collector is stopped with
// SIGTERM: killed outright, it would lose what its file exporter had
// acknowledged but not yet written, which no sender can know of.
func TestCollectorKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the collector; skipped in -short mode")
	}
	clearOTEL(t)
	dir := t.TempDir()
	addr := freeAddr(t)
	out1, out2 := filepath.Join(dir, "out1.json"), filepath.Join(dir, "out2.json")
	c1 := startCollector(t, addr, out1)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://"+addr)
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
	t.Setenv("OTEL_RESOURCE_ATTRIBUTES", "host.name=node-k")
	w := newWorld(t, testLines...)
	recs, _ := testRecords(t, w)
	e, err := New(context.Background(), Config{QueueSize: 4096, Interval: 20 * time.Millisecond,
		ExportTimeout: time.Second, Backoff: 20 * time.Millisecond, MaxBackoff: 200 * time.Millisecond, Metrics: true})
	if err != nil {
		t.Fatal(err)
	}
	var sent atomic.Uint64
	e.SetCounts(func() (Counts, error) { return Counts{Events: []EventCount{{"kprobes/myprobe", sent.Load(), 0}}}, nil })
	// burst gives the exporter k records, each a body of its own (its
	// time), as the ring buffer reader would, and returns the time the
	// calls took.
	ts := uint64(1e9)
	var line []byte
	burst := func(k int) time.Duration {
		start := time.Now()
		for i := 0; i < k; i++ {
			r := &recs[i%len(recs)]
			ts += 1000
			r.TS = ts
			line = w.dec.AppendText(line[:0], r)
			e.Event(w.dec, r)
		}
		d := time.Since(start)
		sent.Add(uint64(k))
		return d
	}
	// run feeds bursts bursts of size records, a pause after each (time
	// for a live collector to take them), and returns the time the
	// calls took.
	const bursts, size = 40, 2000
	run := func() time.Duration {
		var d time.Duration
		for i := 0; i < bursts; i++ {
			d += burst(size)
			time.Sleep(20 * time.Millisecond)
		}
		return d
	}
	settle := func(what string) {
		deadline := time.Now().Add(20 * time.Second)
		for {
			st := e.Stats()
			if st.Exported+st.Dropped() == sent.Load() {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: the exporter did not settle: %+v, %d sent", what, st, sent.Load())
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	up := run()
	settle("collector up")
	st1 := e.Stats()
	if st1.Exported == 0 {
		t.Fatalf("nothing exported with the collector up: %+v", st1)
	}
	// Stopped while records keep coming.
	stopped := make(chan struct{})
	go func() {
		time.Sleep(100 * time.Millisecond)
		c1.stop(t, syscall.SIGTERM)
		close(stopped)
	}()
	run()
	<-stopped
	down := run()
	settle("collector down")
	st2 := e.Stats()
	if st2.Dropped() == st1.Dropped() {
		t.Fatalf("nothing was dropped with the collector down: %+v", st2)
	}
	// Started again on the same address: the export resumes.
	c2 := startCollector(t, addr, out2)
	deadline := time.Now().Add(30 * time.Second)
	for e.Stats().Exported == st2.Exported {
		if time.Now().After(deadline) {
			t.Fatalf("the export does not resume with the collector restarted: %+v", e.Stats())
		}
		burst(100)
		time.Sleep(50 * time.Millisecond)
	}
	run()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := e.Shutdown(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c2.stop(t, syscall.SIGTERM)
	g1, g2 := readCollected(t, out1), readCollected(t, out2)
	b1, b2 := g1.records(), g2.records()
	arrived := 0
	for _, b := range []map[string][]arrival{b1, b2} {
		for body, a := range b {
			arrived += len(a)
			if len(a) != 1 || len(b1[body])+len(b2[body]) != 1 {
				t.Errorf("%q received %d times", body, len(b1[body])+len(b2[body]))
			}
		}
	}
	t.Logf("%d records given: %d exported (%d before the stop, %d to the restarted collector), %d dropped (%d queue full, %d export failed); %d arrived (%d, %d); last error: %v",
		sent.Load(), st.Exported, st1.Exported, countRecords(b2), st.Dropped(), st.QueueFull, st.Failed, arrived, countRecords(b1), countRecords(b2), st.LastErr)
	if st.Exported+st.Dropped() != sent.Load() {
		t.Errorf("exported %d + dropped %d != %d given", st.Exported, st.Dropped(), sent.Load())
	}
	if uint64(arrived) != st.Exported {
		t.Errorf("%d records arrived, %d exported", arrived, st.Exported)
	}
	if len(b2) == 0 {
		t.Errorf("the restarted collector got no log record")
	}
	dropped := g2.lastCounts()["node-k "+MetricDropped+" reason=queue_full"] + g2.lastCounts()["node-k "+MetricDropped+" reason=export_failed"]
	if dropped != int64(st.Dropped()) {
		t.Errorf("the restarted collector got %s = %d, want %d", MetricDropped, dropped, st.Dropped())
	}
	ratio := float64(down) / float64(up)
	t.Logf("FIGURE export: %d Event calls in bursts of %d: %v with the collector up, %v with it down (ratio %.2f)", bursts*size, size, up, down, ratio)
	// Were Event to wait for the collector, the calls with the
	// collector down would take the export timeout, not microseconds.
	if ratio > 4 {
		t.Errorf("Event is slowed with the collector down: %v, against %v up (ratio %.2f)", down, up, ratio)
	}
}

func countRecords(b map[string][]arrival) int {
	n := 0
	for _, a := range b {
		n += len(a)
	}
	return n
}
