package export

import (
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"reflect"
	"strings"
	"testing"
	"time"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	"golang.org/x/sys/unix"

	"github.com/ktrace-dev/ktrace/events"
	"github.com/ktrace-dev/ktrace/fetchargs"
	"github.com/ktrace-dev/ktrace/internal/vmtest"
	"github.com/ktrace-dev/ktrace/kernel"
	"github.com/ktrace-dev/ktrace/tracer"
)

// anyValue turns an OTLP value into a plain Go value: int64, string,
// []any, or nil for an empty value.
func anyValue(v *commonpb.AnyValue) any {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_IntValue:
		return x.IntValue
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_BoolValue:
		return x.BoolValue
	case *commonpb.AnyValue_DoubleValue:
		return x.DoubleValue
	case *commonpb.AnyValue_ArrayValue:
		out := []any{}
		for _, e := range x.ArrayValue.Values {
			out = append(out, anyValue(e))
		}
		return out
	}
	return nil
}

// world is a decoder for some probes of the 6.12 model, and a way to
// make their raw ring buffer records as the eBPF programs write them.
type world struct {
	m    *kernel.Model
	plan *tracer.Plan
	dec  *tracer.Decoder
}

func newWorld(t testing.TB, lines ...string) *world {
	t.Helper()
	m := vmtest.Model(t, "6.12")
	reg := events.NewRegistry(m, nil)
	for _, l := range lines {
		if _, err := reg.Write(events.KprobeEvents, []byte(l+"\n")); err != nil {
			t.Fatalf("%s: %v", l, err)
		}
	}
	plan, err := tracer.NewPlan(reg.Events(), tracer.PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return &world{m: m, plan: plan, dec: tracer.NewDecoder(m, plan)}
}

// probe returns the probe of event name.
func (w *world) probe(t testing.TB, name string) *tracer.Probe {
	for _, p := range w.plan.Probes {
		if p.Event.Name == name {
			return p
		}
	}
	t.Fatalf("no probe %s", name)
	return nil
}

// sample builds one raw record: ktrace's header, then the kernel
// layout. vals gives each argument's elements in order: a uint64 for a
// number, a string for a string (nil for a fault).
type sample struct {
	p    *tracer.Probe
	buf  []byte
	dyn  int
	args []*fetchargs.Arg
}

func (w *world) sample(t testing.TB, name string, ts uint64, cpu uint32, comm string, pid, tgid int32, ip, ret uint64) *sample {
	p := w.probe(t, name)
	s := &sample{p: p, buf: make([]byte, fetchargs.HeaderSize+p.Layout.RecordSize()), dyn: p.Layout.Fixed, args: p.Probe.Args}
	if s.args == nil {
		s.args = p.Event.Args
	}
	binary.LittleEndian.PutUint64(s.buf[0:], ts)
	binary.LittleEndian.PutUint32(s.buf[8:], cpu)
	binary.LittleEndian.PutUint32(s.buf[12:], p.Index)
	copy(s.buf[16:32], comm)
	binary.LittleEndian.PutUint32(s.buf[32:], uint32(tgid))
	r := s.rec()
	binary.LittleEndian.PutUint16(r[0:], uint16(p.Event.ID))
	binary.LittleEndian.PutUint32(r[4:], uint32(pid))
	binary.LittleEndian.PutUint64(r[8:], ip)
	if p.Layout.Return {
		binary.LittleEndian.PutUint64(r[16:], ret)
	}
	return s
}

func (s *sample) rec() []byte { return s.buf[fetchargs.HeaderSize:] }

func (s *sample) num(i, k int, v uint64) *sample {
	a := s.args[i]
	off := s.p.Layout.Offsets[i] + k*a.Type.Size
	var tmp [8]byte
	binary.LittleEndian.PutUint64(tmp[:], v)
	copy(s.rec()[off:off+a.Type.Size], tmp[:])
	return s
}

// str stores a string for argument i, element k; fault stores the
// zero-length __data_loc of a failed read.
func (s *sample) str(i, k int, v string, fault bool) *sample {
	off := s.p.Layout.Offsets[i] + 4*k
	if fault {
		binary.LittleEndian.PutUint32(s.rec()[off:], uint32(s.dyn))
		return s
	}
	n := copy(s.rec()[s.dyn:], v+"\x00")
	binary.LittleEndian.PutUint32(s.rec()[off:], uint32(n)<<16|uint32(s.dyn))
	s.dyn += n
	return s
}

func (w *world) decode(t testing.TB, s *sample) tracer.Record {
	t.Helper()
	r, err := w.dec.Decode(s.buf)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func (w *world) addr(t testing.TB, name string) uint64 {
	a, ok := w.m.LookupName(name)
	if !ok {
		t.Fatalf("no symbol %s", name)
	}
	return a
}

var testLines = []string{
	"p:myprobe do_sys_openat2 dfd=%di:s32 path=+0(%si):string flags=+8(%dx):x32",
	"p:arr vfs_read a=+0(%di):u8[3] c=+0(%si):char s=+0(%dx):string[2] sym=%ax:symbol pid=%cx:u64 big=%r8:x64",
	"r:rev vfs_read $retval",
}

// testRecords returns records of each test event, and the attributes
// each must carry (the format's types, by hand).
func testRecords(t testing.TB, w *world) ([]tracer.Record, []map[string]any) {
	open, vread, ksys := w.addr(t, "do_sys_openat2"), w.addr(t, "vfs_read"), w.addr(t, "ksys_read")
	jiffies := w.addr(t, "jiffies")
	s1 := w.sample(t, "myprobe", 12345678901234, 1, "cat", 4242, 4240, open, 0).
		num(0, 0, uint64(0xffffff9c)).str(1, 0, "/etc/hostname", false).num(2, 0, 0x8000)
	s2 := w.sample(t, "arr", 12345678902000, 0, "ls", 77, 77, vread, 0).
		num(0, 0, 1).num(0, 1, 2).num(0, 2, 255).num(1, 0, 'x').
		str(2, 0, "one", false).str(2, 1, "", true).num(3, 0, jiffies).num(4, 0, 9).num(5, 0, 0xffffffff81000000)
	s3 := w.sample(t, "rev", 12345678903000, 3, "sh", 12, 10, vread, ksys+0x6c).num(0, 0, uint64(0xfffffffffffffff2))
	s4 := w.sample(t, "myprobe", 12345678904000, 1, "cat", 4242, 4240, open, 0).
		num(0, 0, 3).str(1, 0, "", true).num(2, 0, 0)
	recs := []tracer.Record{w.decode(t, s1), w.decode(t, s2), w.decode(t, s3), w.decode(t, s4)}
	want := []map[string]any{
		{"event": "kprobes/myprobe", "comm": "cat", "pid": int64(4242), "tgid": int64(4240), "cpu": int64(1),
			"dfd": int64(-100), "path": "/etc/hostname", "flags": int64(0x8000)},
		{"event": "kprobes/arr", "comm": "ls", "pid": int64(77), "tgid": int64(77), "cpu": int64(0),
			"a": []any{int64(1), int64(2), int64(255)}, "c": "x", "s": []any{"one", nil},
			"sym": symText(t, w.m, jiffies), "arg.pid": int64(9), "big": int64(-0x7f000000)},
		{"event": "kprobes/rev", "comm": "sh", "pid": int64(12), "tgid": int64(10), "cpu": int64(3),
			"arg1": int64(-14)},
		{"event": "kprobes/myprobe", "comm": "cat", "pid": int64(4242), "tgid": int64(4240), "cpu": int64(1),
			"dfd": int64(3), "flags": int64(0)},
	}
	return recs, want
}

func symText(t testing.TB, m *kernel.Model, addr uint64) string {
	s, ok := m.SymbolAt(addr)
	if !ok {
		t.Fatalf("no symbol at %#x", addr)
	}
	return fmt.Sprintf("%s+%#x/%#x", s.Name, addr-s.Addr, s.Size)
}

// clearOTEL unsets the OTEL_* variables a test does not set itself.
func clearOTEL(t *testing.T) {
	for _, v := range []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT", "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
		"OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_LOGS_PROTOCOL", "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL",
		"OTEL_EXPORTER_OTLP_INSECURE", "OTEL_EXPORTER_OTLP_HEADERS", "OTEL_SERVICE_NAME", "OTEL_RESOURCE_ATTRIBUTES",
		"OTEL_BLRP_MAX_QUEUE_SIZE", "OTEL_BLRP_SCHEDULE_DELAY", "OTEL_BLRP_EXPORT_TIMEOUT", "OTEL_BLRP_MAX_EXPORT_BATCH_SIZE",
		"OTEL_METRIC_EXPORT_INTERVAL"} {
		t.Setenv(v, "")
	}
}

// TestExportLogs sends records of each argument kind through both
// protocols to an in-process receiver and checks each log record's body,
// typed attributes, timestamps and resource.
func TestExportLogs(t *testing.T) {
	for _, proto := range []string{"grpc", "http/protobuf"} {
		t.Run(strings.ReplaceAll(proto, "/", "_"), func(t *testing.T) {
			clearOTEL(t)
			rcv := &receiver{}
			if proto == "grpc" {
				t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://"+startGRPC(t, rcv))
			} else {
				t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://"+startHTTP(t, rcv))
			}
			t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", proto)
			t.Setenv("OTEL_RESOURCE_ATTRIBUTES", "host.name=node-7,k8s.cluster.name=prod")
			t.Setenv("OTEL_EXPORTER_OTLP_HEADERS", "x-ktrace-test=token%20abc")
			w := newWorld(t, testLines...)
			recs, want := testRecords(t, w)
			e, err := New(context.Background(), Config{Metrics: true})
			if err != nil {
				t.Fatal(err)
			}
			e.SetCounts(func() (Counts, error) {
				return Counts{Events: []EventCount{{"kprobes/myprobe", 5, 1}, {"kprobes/arr", 1, 0}, {"kprobes/rev", 1, 0}}, Undecodable: 2}, nil
			})
			var line []byte
			for i := range recs {
				line = w.dec.AppendText(line[:0], &recs[i])
				e.Event(w.dec, &recs[i])
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			st, err := e.Shutdown(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if st.Exported != uint64(len(recs)) || st.Dropped() != 0 {
				t.Fatalf("stats %+v, want %d exported, none dropped", st, len(recs))
			}
			rcv.mu.Lock()
			if len(rcv.headers) == 0 || rcv.headers[0] != "token abc" {
				t.Errorf("OTEL_EXPORTER_OTLP_HEADERS: the receiver got x-ktrace-test %q", rcv.headers)
			}
			rcv.mu.Unlock()
			got, res := rcv.records()
			if len(got) != len(recs) {
				t.Fatalf("received %d records, want %d", len(got), len(recs))
			}
			for i, lr := range got {
				line := string(w.dec.AppendText(nil, &recs[i]))
				if body := lr.Body.GetStringValue(); body != strings.TrimSuffix(line, "\n") {
					t.Errorf("record %d body %q, want %q", i, body, line)
				}
				attrs := map[string]any{}
				for _, kv := range lr.Attributes {
					if _, dup := attrs[kv.Key]; dup {
						t.Errorf("record %d: attribute %s twice", i, kv.Key)
					}
					attrs[kv.Key] = anyValue(kv.Value)
				}
				if !reflect.DeepEqual(attrs, want[i]) {
					t.Errorf("record %d attributes\n got %v\nwant %v", i, attrs, want[i])
				}
				if lr.EventName != want[i]["event"] {
					t.Errorf("record %d event name %q", i, lr.EventName)
				}
				if ts := int64(lr.TimeUnixNano); ts != int64(recs[i].TS)+e.wallOffset {
					t.Errorf("record %d time %d, want %d", i, ts, int64(recs[i].TS)+e.wallOffset)
				}
				r := res[i]
				for k, v := range map[string]any{"service.name": "ktrace", "os.type": "linux", "host.name": "node-7", "k8s.cluster.name": "prod"} {
					if r[k] != v {
						t.Errorf("resource %s=%v, want %v", k, r[k], v)
					}
				}
				if s, _ := r["os.version"].(string); s == "" {
					t.Errorf("resource has no os.version (kernel release): %v", r)
				}
			}
			// The wall clock offset: a record stamped now on the
			// monotonic clock is now on the wall clock.
			now := time.Now().UnixNano()
			var mono unix.Timespec
			unix.ClockGettime(unix.CLOCK_MONOTONIC, &mono)
			if d := mono.Nano() + e.wallOffset - now; d < -int64(50*time.Millisecond) || d > int64(50*time.Millisecond) {
				t.Errorf("wall clock offset is off by %v", time.Duration(d))
			}
			checkMetrics(t, rcv)
		})
	}
}

// checkMetrics checks the last value of each counter the receiver got.
func checkMetrics(t *testing.T, rcv *receiver) {
	t.Helper()
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	got := map[string]int64{}
	for _, rm := range rcv.metrics {
		for _, sm := range rm.ScopeMetrics {
			for _, m := range sm.Metrics {
				sum := m.GetSum()
				if sum == nil || !sum.IsMonotonic {
					t.Errorf("metric %s is not a monotonic sum", m.Name)
					continue
				}
				for _, dp := range sum.DataPoints {
					key := m.Name
					for _, kv := range dp.Attributes {
						key += fmt.Sprintf(" %s=%v", kv.Key, anyValue(kv.Value))
					}
					got[key] = dp.GetAsInt()
				}
			}
		}
	}
	want := map[string]int64{
		"ktrace.event.hits event=kprobes/myprobe":    5,
		"ktrace.event.misses event=kprobes/myprobe":  1,
		"ktrace.event.hits event=kprobes/arr":        1,
		"ktrace.event.misses event=kprobes/arr":      0,
		"ktrace.event.hits event=kprobes/rev":        1,
		"ktrace.event.misses event=kprobes/rev":      0,
		"ktrace.events.lost reason=ring_buffer_full": 1,
		"ktrace.events.lost reason=undecodable":      2,
		"ktrace.export.dropped reason=queue_full":    0,
		"ktrace.export.dropped reason=export_failed": 0,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("metrics\n got %v\nwant %v", got, want)
	}
}

// feed calls Event n times with the records in turn, on one goroutine
// standing for the ring buffer reader; it fails the test if the calls do
// not all return within a generous bound (Event must never wait for the
// collector).
func feed(t *testing.T, e *Exporter, w *world, recs []tracer.Record, n int) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		var line []byte
		for i := 0; i < n; i++ {
			// The reader prints each record, then hands it on.
			line = w.dec.AppendText(line[:0], &recs[i%len(recs)])
			e.Event(w.dec, &recs[i%len(recs)])
		}
	}()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatalf("Event blocked: %d calls did not return in 20 s", n)
	}
}

// TestExportDown exports to an endpoint where nothing listens: Event
// never blocks, every record is dropped and counted (queue full, or its
// batch failed after retries), and Shutdown returns when its context
// ends.
func TestExportDown(t *testing.T) {
	for _, proto := range []string{"grpc", "http/protobuf"} {
		t.Run(strings.ReplaceAll(proto, "/", "_"), func(t *testing.T) {
			clearOTEL(t)
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			addr := l.Addr().String()
			l.Close()
			t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://"+addr)
			t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", proto)
			w := newWorld(t, testLines...)
			recs, _ := testRecords(t, w)
			e, err := New(context.Background(), Config{QueueSize: 256, BatchSize: 64, Interval: 10 * time.Millisecond,
				ExportTimeout: 200 * time.Millisecond, Backoff: 5 * time.Millisecond, MaxBackoff: 50 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			const n = 200000
			feed(t, e, w, recs, n)
			ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
			defer cancel()
			st, _ := e.Shutdown(ctx)
			if st.Exported != 0 || st.Dropped() != n {
				t.Fatalf("stats %+v: want 0 exported, %d dropped", st, n)
			}
			if st.QueueFull == 0 || st.Failed == 0 {
				t.Errorf("stats %+v: want drops of both kinds", st)
			}
			if st.LastErr == nil {
				t.Errorf("no export error reported")
			}
		})
	}
}

// TestExportStalled stalls the collector while events keep coming, then
// lets it go: Event never blocks, what the collector received and what
// was dropped add up to every event, and the dropped count reaches the
// collector as a metric.
func TestExportStalled(t *testing.T) {
	clearOTEL(t)
	rcv := &receiver{stall: make(chan struct{})}
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://"+startGRPC(t, rcv))
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
	w := newWorld(t, testLines...)
	recs, _ := testRecords(t, w)
	e, err := New(context.Background(), Config{QueueSize: 512, BatchSize: 128, Interval: 10 * time.Millisecond,
		ExportTimeout: 5 * time.Second, Backoff: 5 * time.Millisecond, Metrics: true})
	if err != nil {
		t.Fatal(err)
	}
	e.SetCounts(func() (Counts, error) { return Counts{}, nil })
	const n = 100000
	feed(t, e, w, recs, n)
	if st := e.Stats(); st.QueueFull == 0 {
		t.Errorf("stats %+v: a stalled collector should fill the queue", st)
	}
	close(rcv.stall)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := e.Shutdown(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := rcv.records()
	if uint64(len(got)) != st.Exported || st.Exported+st.Dropped() != n || st.Exported == 0 {
		t.Fatalf("stats %+v, %d received: want exported = received > 0 and exported + dropped = %d", st, len(got), n)
	}
	rcv.mu.Lock()
	var dropped int64
	for _, rm := range rcv.metrics {
		for _, sm := range rm.ScopeMetrics {
			for _, m := range sm.Metrics {
				if m.Name != MetricDropped {
					continue
				}
				dropped = 0
				for _, dp := range m.GetSum().DataPoints {
					dropped += dp.GetAsInt()
				}
			}
		}
	}
	rcv.mu.Unlock()
	if dropped != int64(st.Dropped()) {
		t.Errorf("metric %s = %d, want %d", MetricDropped, dropped, st.Dropped())
	}
}
