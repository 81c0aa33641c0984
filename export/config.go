package export

import (
	"fmt"
	"os"
	"strconv"
	"time"
)

// Config sizes the export pipeline. The zero value takes every setting
// from the environment (OTEL_BLRP_*, as the OpenTelemetry specification
// defines them for a batch log record processor) or its default.
type Config struct {
	// QueueSize is the most records waiting to be turned into log
	// records (OTEL_BLRP_MAX_QUEUE_SIZE, default 2048).
	QueueSize int
	// QueueBytes is the most record data (the raw records, as the ring
	// buffer holds them) those waiting records may hold (default 4 MiB).
	QueueBytes int
	// BatchSize is the most log records in one export request
	// (OTEL_BLRP_MAX_EXPORT_BATCH_SIZE, default 512); a batch is also
	// sent once it holds BatchBytes of record data (default 1 MiB).
	BatchSize  int
	BatchBytes int
	// Interval is the longest a log record waits for its batch to fill
	// (OTEL_BLRP_SCHEDULE_DELAY, milliseconds, default 1000).
	Interval time.Duration
	// ExportTimeout bounds the export of one batch, retries included
	// (OTEL_BLRP_EXPORT_TIMEOUT, milliseconds, default 30000); then the
	// batch is dropped and counted.
	ExportTimeout time.Duration
	// Backoff is the first wait before retrying a failed export (default
	// 250 ms); each retry doubles it, up to MaxBackoff (default 5 s).
	Backoff, MaxBackoff time.Duration
	// Metrics also exports the counters as OTLP metrics, every
	// OTEL_METRIC_EXPORT_INTERVAL (the SDK's periodic reader, default
	// 60 s) and once more at shutdown.
	Metrics bool
}

// Memory bound, with the defaults: the queue holds at most 2048 records
// and 4 MiB of record data; behind it are at most three batches (one
// being filled, one waiting, one being exported) of at most 512 records
// or 1 MiB of record data each, which take about three times their record
// data once converted (the body text and the attribute values copy it),
// plus the encoding of the request in flight. Hence at most about 16 MiB,
// whatever the event rate or the collector's state (TestMemoryBound
// measures it with a stalled collector).

const (
	defaultQueueSize     = 2048
	defaultQueueBytes    = 4 << 20
	defaultBatchSize     = 512
	defaultBatchBytes    = 1 << 20
	defaultInterval      = time.Second
	defaultExportTimeout = 30 * time.Second
	defaultBackoff       = 250 * time.Millisecond
	defaultMaxBackoff    = 5 * time.Second
)

// withDefaults fills the zero fields from the environment or the
// defaults.
func (c Config) withDefaults() (Config, error) {
	var err error
	intVar := func(field *int, env string, def int) {
		if *field != 0 || err != nil {
			return
		}
		*field = def
		if s := os.Getenv(env); s != "" {
			n, e := strconv.Atoi(s)
			if e != nil || n <= 0 {
				err = fmt.Errorf("%s=%q: want a positive integer", env, s)
				return
			}
			*field = n
		}
	}
	msVar := func(field *time.Duration, env string, def time.Duration) {
		if *field != 0 || err != nil {
			return
		}
		*field = def
		if s := os.Getenv(env); s != "" {
			n, e := strconv.Atoi(s)
			if e != nil || n <= 0 {
				err = fmt.Errorf("%s=%q: want a positive number of milliseconds", env, s)
				return
			}
			*field = time.Duration(n) * time.Millisecond
		}
	}
	intVar(&c.QueueSize, "OTEL_BLRP_MAX_QUEUE_SIZE", defaultQueueSize)
	intVar(&c.BatchSize, "OTEL_BLRP_MAX_EXPORT_BATCH_SIZE", defaultBatchSize)
	msVar(&c.Interval, "OTEL_BLRP_SCHEDULE_DELAY", defaultInterval)
	msVar(&c.ExportTimeout, "OTEL_BLRP_EXPORT_TIMEOUT", defaultExportTimeout)
	if err != nil {
		return c, err
	}
	// The specification: a batch is never larger than the queue.
	c.BatchSize = min(c.BatchSize, c.QueueSize)
	if c.QueueBytes <= 0 {
		c.QueueBytes = defaultQueueBytes
	}
	if c.BatchBytes <= 0 {
		c.BatchBytes = defaultBatchBytes
	}
	if c.Backoff <= 0 {
		c.Backoff = defaultBackoff
	}
	if c.MaxBackoff <= 0 {
		c.MaxBackoff = defaultMaxBackoff
	}
	return c, nil
}

// protocol is the OTLP transport for one signal ("LOGS", "METRICS"):
// OTEL_EXPORTER_OTLP_<SIGNAL>_PROTOCOL, else OTEL_EXPORTER_OTLP_PROTOCOL,
// else http/protobuf, the specification's default.
func protocol(signal string) (string, error) {
	env := "OTEL_EXPORTER_OTLP_" + signal + "_PROTOCOL"
	p := os.Getenv(env)
	if p == "" {
		env = "OTEL_EXPORTER_OTLP_PROTOCOL"
		p = os.Getenv(env)
	}
	switch p {
	case "":
		return "http/protobuf", nil
	case "grpc", "http/protobuf":
		return p, nil
	case "http/json":
		return "", fmt.Errorf("%s=http/json: the OpenTelemetry Go exporters send grpc or http/protobuf only", env)
	}
	return "", fmt.Errorf("%s=%q: want grpc or http/protobuf", env, p)
}
