package export

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/exporters/otlp/otlplog/otlploggrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlplog/otlploghttp"
	"go.opentelemetry.io/otel/log"
	sdklog "go.opentelemetry.io/otel/sdk/log"
	"go.opentelemetry.io/otel/sdk/resource"
	"golang.org/x/sys/unix"

	"github.com/ktrace-dev/ktrace/tracer"
)

// Exporter sends events as OTLP log records, and counters as OTLP
// metrics. Event is called by the ring buffer reader; Shutdown once the
// reader is done.
type Exporter struct {
	cfg      Config
	res      *resource.Resource
	provider *sdklog.LoggerProvider
	tmpl     sdklog.Record // a record with the resource and scope, no data
	exp      sdklog.Exporter
	metrics  *meters // nil without Config.Metrics
	// wallOffset turns the records' CLOCK_MONOTONIC times into wall-clock
	// times: CLOCK_REALTIME - CLOCK_MONOTONIC when the exporter started.
	wallOffset int64

	queue       chan *item
	queueBytes  atomic.Int64
	batches     chan []sdklog.Record
	batch       []sdklog.Record // filled by the worker
	batchBytes  int
	closed      atomic.Bool
	abort       context.Context // cancelled when Shutdown gives up waiting
	cancelAbort context.CancelFunc
	done        chan struct{} // closed when the sender has handled every batch
	names       map[*tracer.Probe]string
	forks       map[*tracer.Decoder]*tracer.Decoder // the worker's decoders
	conv        converter

	accepted, exported, queueFull, failed atomic.Uint64
	errMu                                 sync.Mutex
	lastErr                               error
}

// Stats are the exporter's counts of log records.
type Stats struct {
	// Exported records reached the collector; QueueFull were dropped
	// because the queue was full (the collector too slow or down), Failed
	// because their batch could not be exported within its timeout.
	Exported, QueueFull, Failed uint64
	// LastErr is the last export error (nil if none).
	LastErr error
}

// Dropped is every record that did not reach the collector.
func (s Stats) Dropped() uint64 { return s.QueueFull + s.Failed }

// item is one record copied off the ring buffer: what Decoder needs to
// print it again on the worker goroutine.
type item struct {
	dec     *tracer.Decoder
	probe   *tracer.Probe
	ts      uint64
	cpu     uint32
	tgid    uint32
	comm    [16]byte
	commLen uint8
	raw     []byte
}

// New starts an exporter: the OTLP log exporter (and, with
// cfg.Metrics, the metric exporter) that OTEL_EXPORTER_OTLP_* select,
// with the resource of this host.
func New(ctx context.Context, cfg Config) (*Exporter, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("export: %w", err)
	}
	res, err := newResource(ctx)
	if err != nil {
		return nil, fmt.Errorf("export: %w", err)
	}
	exp, err := newLogExporter(ctx)
	if err != nil {
		return nil, fmt.Errorf("export: %w", err)
	}
	return start(ctx, cfg, res, exp)
}

// newLogExporter makes the SDK's OTLP log exporter for the protocol the
// environment names. Its own retries are off: the sender retries every
// failed export the same way on both protocols.
func newLogExporter(ctx context.Context) (sdklog.Exporter, error) {
	proto, err := protocol("LOGS")
	if err != nil {
		return nil, err
	}
	if proto == "grpc" {
		e, err := otlploggrpc.New(ctx, otlploggrpc.WithRetry(otlploggrpc.RetryConfig{Enabled: false}))
		if err != nil {
			return nil, fmt.Errorf("OTLP/gRPC log exporter: %w", err)
		}
		return e, nil
	}
	e, err := otlploghttp.New(ctx, otlploghttp.WithRetry(otlploghttp.RetryConfig{Enabled: false}))
	if err != nil {
		return nil, fmt.Errorf("OTLP/HTTP log exporter: %w", err)
	}
	return e, nil
}

// start runs the pipeline in front of exp.
func start(ctx context.Context, cfg Config, res *resource.Resource, exp sdklog.Exporter) (*Exporter, error) {
	e := &Exporter{
		cfg:        cfg,
		res:        res,
		exp:        exp,
		wallOffset: wallOffset(),
		queue:      make(chan *item, cfg.QueueSize),
		batches:    make(chan []sdklog.Record, 1),
		done:       make(chan struct{}),
		names:      map[*tracer.Probe]string{},
		forks:      map[*tracer.Decoder]*tracer.Decoder{},
	}
	e.abort, e.cancelAbort = context.WithCancel(context.Background())
	var err error
	if e.provider, e.tmpl, err = newTemplate(ctx, res); err != nil {
		return nil, err
	}
	if cfg.Metrics {
		m, err := newMeters(ctx, res, e)
		if err != nil {
			e.provider.Shutdown(ctx)
			exp.Shutdown(ctx)
			return nil, fmt.Errorf("export: %w", err)
		}
		e.metrics = m
	}
	go e.work()
	go e.send()
	return e, nil
}

// background gives the calling goroutine a thread of its own at the
// lowest CPU priority (nice 19), for the rest of its life (the thread ends
// with it). The export's conversion and sending then take the CPU the
// traced workload and the ring buffer reader leave: under load the export
// falls behind and its queue drops records (counted), instead of slowing
// what is traced. A thread whose priority cannot be lowered runs as it is.
func background() {
	runtime.LockOSThread()
	unix.Setpriority(unix.PRIO_PROCESS, unix.Gettid(), 19)
}

// wallOffset is CLOCK_REALTIME - CLOCK_MONOTONIC now, in nanoseconds: the
// records' times are bpf_ktime_get_ns, the monotonic clock.
func wallOffset() int64 {
	var mono1, real, mono2 unix.Timespec
	unix.ClockGettime(unix.CLOCK_MONOTONIC, &mono1)
	unix.ClockGettime(unix.CLOCK_REALTIME, &real)
	unix.ClockGettime(unix.CLOCK_MONOTONIC, &mono2)
	mono := (mono1.Nano() + mono2.Nano()) / 2
	return real.Nano() - mono
}

// Event queues one record for export, copying what it needs: r may be
// reused once Event returns. It never blocks: when the queue is full (or
// the exporter is shut down) the record is dropped and counted. It is
// meant for one goroutine, the ring buffer reader.
func (e *Exporter) Event(d *tracer.Decoder, r *tracer.Record) {
	if e.closed.Load() {
		e.queueFull.Add(1)
		return
	}
	n := int64(len(r.Raw))
	if e.queueBytes.Load()+n > int64(e.cfg.QueueBytes) {
		e.queueFull.Add(1)
		return
	}
	it := &item{dec: d, probe: r.Probe, ts: r.TS, cpu: r.CPU, tgid: r.Tgid(), raw: append([]byte(nil), r.Raw...)}
	it.commLen = uint8(copy(it.comm[:], r.Comm))
	select {
	case e.queue <- it:
		e.queueBytes.Add(n)
		e.accepted.Add(1)
	default:
		e.queueFull.Add(1)
	}
}

// work turns queued records into log records and passes full batches, or batches older
// than the interval, to the sender. It ends when the queue is closed and
// empty, closing the batch channel.
func (e *Exporter) work() {
	defer close(e.batches)
	background()
	tick := time.NewTicker(e.cfg.Interval)
	defer tick.Stop()
	for {
		select {
		case it, ok := <-e.queue:
			if !ok {
				e.flushBatch()
				return
			}
			e.batch = append(e.batch, e.conv.record(e, it))
			e.batchBytes += len(it.raw)
			e.queueBytes.Add(-int64(len(it.raw)))
			if len(e.batch) >= e.cfg.BatchSize || e.batchBytes >= e.cfg.BatchBytes {
				e.flushBatch()
			}
		case <-tick.C:
			e.flushBatch()
		}
	}
}

// flushBatch hands the batch to the sender, waiting while the sender is
// busy with the one before (the queue absorbs, then drops, what comes
// meanwhile).
func (e *Exporter) flushBatch() {
	if len(e.batch) == 0 {
		return
	}
	e.batches <- e.batch
	e.batch = make([]sdklog.Record, 0, e.cfg.BatchSize)
	e.batchBytes = 0
}

// newTemplate returns the log provider and a record of its, with no data.
// The SDK's logger stamps the resource and the scope on the records it
// emits: one record emitted here is the template the worker copies for
// every event (emitting each through the logger would copy every record
// twice more). Argument names are unique (see converter), so no duplicate
// keys are looked for; a probe may have the kernel's 128 arguments
// besides the 5 common attributes.
func newTemplate(ctx context.Context, res *resource.Resource) (*sdklog.LoggerProvider, sdklog.Record, error) {
	var tmpl template
	p := sdklog.NewLoggerProvider(
		sdklog.WithResource(res),
		sdklog.WithProcessor(&tmpl),
		sdklog.WithAttributeCountLimit(-1),
		sdklog.WithAllowKeyDuplication())
	p.Logger("github.com/ktrace-dev/ktrace").Emit(ctx, log.Record{})
	if !tmpl.ok {
		return nil, sdklog.Record{}, errors.New("export: the log SDK emitted no record")
	}
	return p, tmpl.rec, nil
}

// template is the SDK log processor that keeps the first record emitted.
type template struct {
	rec sdklog.Record
	ok  bool
}

func (t *template) OnEmit(_ context.Context, r *sdklog.Record) error {
	if !t.ok {
		t.rec, t.ok = r.Clone(), true
	}
	return nil
}

func (*template) Enabled(context.Context, sdklog.EnabledParameters) bool { return true }
func (*template) Shutdown(context.Context) error                         { return nil }
func (*template) ForceFlush(context.Context) error                       { return nil }

// send exports each batch, retrying a failed export with exponential
// backoff until the batch's export timeout; a batch that cannot be sent
// by then, or once Shutdown gave up waiting, is dropped and counted.
func (e *Exporter) send() {
	defer close(e.done)
	background()
	for b := range e.batches {
		e.exportBatch(b)
	}
}

func (e *Exporter) exportBatch(b []sdklog.Record) {
	n := uint64(len(b))
	deadline := time.Now().Add(e.cfg.ExportTimeout)
	wait := e.cfg.Backoff
	for {
		if e.abort.Err() != nil {
			e.failed.Add(n)
			return
		}
		ctx, cancel := context.WithDeadline(e.abort, deadline)
		err := e.exp.Export(ctx, b)
		cancel()
		if err == nil {
			e.exported.Add(n)
			return
		}
		e.setErr(err)
		left := time.Until(deadline)
		if left <= 0 {
			e.failed.Add(n)
			return
		}
		t := time.NewTimer(min(wait, left))
		select {
		case <-t.C:
		case <-e.abort.Done():
			t.Stop()
		}
		wait = min(2*wait, e.cfg.MaxBackoff)
	}
}

func (e *Exporter) setErr(err error) {
	e.errMu.Lock()
	e.lastErr = err
	e.errMu.Unlock()
}

// Stats returns the counts so far.
func (e *Exporter) Stats() Stats {
	e.errMu.Lock()
	err := e.lastErr
	e.errMu.Unlock()
	return Stats{Exported: e.exported.Load(), QueueFull: e.queueFull.Load(), Failed: e.failed.Load(), LastErr: err}
}

// Shutdown exports what is queued, waiting until ctx is done at most
// (then what is left is dropped and counted), sends the counters a last
// time and closes the exporters. Event must not be called from then on.
func (e *Exporter) Shutdown(ctx context.Context) (Stats, error) {
	if e.closed.Swap(true) {
		return e.Stats(), errors.New("export: shut down twice")
	}
	close(e.queue)
	select {
	case <-e.done:
	case <-ctx.Done():
		e.cancelAbort()
		<-e.done
	}
	e.cancelAbort()
	// A fresh context for closing: the one given may be spent.
	cctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	var errs []error
	if err := e.provider.Shutdown(cctx); err != nil {
		errs = append(errs, fmt.Errorf("log provider: %w", err))
	}
	if err := e.exp.Shutdown(cctx); err != nil {
		errs = append(errs, fmt.Errorf("log exporter: %w", err))
	}
	if e.metrics != nil {
		// The last collection and export of the counters.
		mctx, mcancel := context.WithTimeout(context.Background(), 5*time.Second)
		if err := e.metrics.shutdown(mctx); err != nil {
			errs = append(errs, fmt.Errorf("metrics: %w", err))
		}
		mcancel()
	}
	st := e.Stats()
	if len(errs) > 0 {
		return st, fmt.Errorf("export: %w", errors.Join(errs...))
	}
	return st, nil
}
