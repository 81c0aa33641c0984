package export

import (
	"context"
	"testing"
	"time"

	"github.com/ktrace-dev/ktrace/tracer"
)

// BenchmarkReader measures what the ring buffer reader spends per record:
// printing its trace line (text), and printing it and handing it to the
// exporter (text+export), with a collector that keeps up; the worker and
// the sender run on other goroutines. The ratio of the two is the
// export's cost on the reader.
func BenchmarkReader(b *testing.B) {
	w := newWorld(b, testLines...)
	recs, _ := testRecords(b, w)
	b.Run("text", func(b *testing.B) {
		var line []byte
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			line = w.dec.AppendText(line[:0], &recs[i%len(recs)])
		}
	})
	b.Run("text+export", func(b *testing.B) {
		rcv := &receiver{}
		b.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://"+startGRPC(b, rcv))
		b.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
		e, err := New(context.Background(), Config{})
		if err != nil {
			b.Fatal(err)
		}
		var line []byte
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			line = w.dec.AppendText(line[:0], &recs[i%len(recs)])
			e.Event(w.dec, &recs[i%len(recs)])
		}
		b.StopTimer()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		st, _ := e.Shutdown(ctx)
		b.ReportMetric(float64(st.Dropped())/float64(b.N), "dropped/op")
		rcv.mu.Lock()
		rcv.logs = nil
		rcv.mu.Unlock()
	})
}

// BenchmarkWorker measures the worker's cost per record: printing the
// trace line and the typed attributes into a log record in the batch.
func BenchmarkWorker(b *testing.B) {
	w := newWorld(b, testLines...)
	recs, _ := testRecords(b, w)
	e := &Exporter{cfg: Config{BatchSize: 512}, names: map[*tracer.Probe]string{}, forks: map[*tracer.Decoder]*tracer.Decoder{}}
	var err error
	if e.provider, e.tmpl, err = newTemplate(context.Background(), nil); err != nil {
		b.Fatal(err)
	}
	items := make([]*item, len(recs))
	for i := range recs {
		r := &recs[i]
		items[i] = &item{dec: w.dec, probe: r.Probe, ts: r.TS, cpu: r.CPU, tgid: r.Tgid(), raw: r.Raw}
		items[i].commLen = uint8(copy(items[i].comm[:], r.Comm))
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		e.batch = append(e.batch, e.conv.record(e, items[i%len(items)]))
		if len(e.batch) == 512 {
			e.batch = e.batch[:0]
		}
	}
}
