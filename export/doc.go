// Package export sends what ktrace records into an OpenTelemetry pipeline:
// every event as one OTLP log record and the tracer's counters (per-event
// hits and misses, lost events, dropped log records) as OTLP metrics,
// through the OpenTelemetry Go SDK and its OTLP exporters (gRPC or
// HTTP/protobuf), configured only by the standard OTEL_* environment
// variables.
//
// A log record's body is the event's trace line as ktrace's text output
// prints it; its attributes are typed from the event's format file (event,
// comm, pid, tgid, cpu and every argument under its name); its time is the
// event's time on the wall clock.
//
// The exporter never slows or stalls the ring buffer reader that feeds it:
// Event copies the record into a bounded queue and returns, dropping (and
// counting) the record when the queue is full. One goroutine turns queued
// records into log records and batches them; another exports the batches,
// retrying a failed batch with exponential backoff until its export
// timeout, then dropping and counting it. Memory stays bounded whatever
// the event rate or the state of the collector (see Config).
package export
