package export

import (
	"context"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/ktrace-dev/ktrace/tracer"
)

// heapNow is the live heap after a full collection.
func heapNow() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// TestMemoryBound feeds records of two 4 KiB strings (the largest common
// case: paths) to an exporter whose collector has stalled, with the
// default sizes, and measures the live heap the export holds: the queue,
// the batches and the request in flight stay within the README's bound
// of 16 MiB however many records come. (The figure includes the
// in-process receiver's copy of the stalled request.)
func TestMemoryBound(t *testing.T) {
	clearOTEL(t)
	rcv := &receiver{stall: make(chan struct{})}
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://"+startGRPC(t, rcv))
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
	w := newWorld(t, "p:big vfs_read s=+0(%di):string u=+0(%si):string")
	long := strings.Repeat("/very/long/path", 4000/15)
	p := w.addr(t, "vfs_read")
	var recs []tracer.Record
	for i := 0; i < 8; i++ {
		s := w.sample(t, "big", uint64(i), 0, "cat", 1, 1, p, 0).str(0, 0, long, false).str(1, 0, long, false)
		recs = append(recs, w.decode(t, s))
	}
	before := heapNow()
	e, err := New(context.Background(), Config{})
	if err != nil {
		t.Fatal(err)
	}
	var peak uint64
	for round := 0; round < 5; round++ {
		feed(t, e, w, recs, 20000)
		time.Sleep(200 * time.Millisecond) // the worker fills its batches
		if h := heapNow(); h > peak {
			peak = h
		}
	}
	st := e.Stats()
	held := int64(peak) - int64(before)
	t.Logf("raw record %d bytes; 100000 records: %d queued or exported, %d dropped; heap held %.1f MiB", len(recs[0].Raw), 100000-st.QueueFull, st.QueueFull, float64(held)/(1<<20))
	if st.QueueFull < 90000 {
		t.Errorf("stats %+v: a stalled collector should make the queue drop most records", st)
	}
	if held > 16<<20 {
		t.Errorf("the export holds %.1f MiB, more than the 16 MiB bound", float64(held)/(1<<20))
	}
	close(rcv.stall)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	e.Shutdown(ctx)
}
