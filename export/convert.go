package export

import (
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdklog "go.opentelemetry.io/otel/sdk/log"

	"github.com/ktrace-dev/ktrace/tracer"
)

// Common attribute keys. An argument whose name is one of these goes
// under "arg.NAME" instead (argument names are C identifiers, so that
// name cannot be another argument's).
var commonKeys = map[string]bool{"event": true, "comm": true, "pid": true, "tgid": true, "cpu": true}

// converter turns queued records into log records; it belongs to the
// worker goroutine.
type converter struct {
	line  []byte
	attrs []attribute.KeyValue
}

// record is the log record of one event:
//   - body: the trace line as ktrace's text output prints it, without its
//     newline;
//   - event name and attribute "event": GROUP/EVENT;
//   - comm, pid (the thread), tgid (the process), cpu;
//   - each argument under its name: signed and unsigned integers as
//     integers (an unsigned 64-bit value above 2^63-1 keeps its 64 bits
//     as a negative integer: OTLP integers are signed), strings, chars
//     and symbols as strings, arrays as arrays of those; a string whose
//     read faulted is left out (in an array: an empty value);
//   - timestamp: the event's time on the wall clock; observed timestamp:
//     when it was converted.
func (c *converter) record(e *Exporter, it *item) sdklog.Record {
	r := tracer.Record{Probe: it.probe, TS: it.ts, CPU: it.cpu, Comm: it.comm[:it.commLen], Raw: it.raw}
	// The reader's decoder keeps caches of its own: the worker prints
	// with a fork of it.
	dec := e.forks[it.dec]
	if dec == nil {
		dec = it.dec.Fork()
		e.forks[it.dec] = dec
	}
	c.line = dec.AppendText(c.line[:0], &r)
	body := c.line
	if n := len(body); n > 0 && body[n-1] == '\n' {
		body = body[:n-1]
	}
	name, ok := e.names[it.probe]
	if !ok {
		name = it.probe.Event.Group + "/" + it.probe.Event.Name
		e.names[it.probe] = name
	}
	rec := e.tmpl
	rec.SetTimestamp(time.Unix(0, int64(it.ts)+e.wallOffset))
	rec.SetObservedTimestamp(time.Now())
	rec.SetEventName(name)
	rec.SetBody(attribute.StringValue(string(body)))
	c.attrs = append(c.attrs[:0],
		attribute.String("event", name),
		attribute.String("comm", string(r.Comm)),
		attribute.Int64("pid", int64(r.Pid())),
		attribute.Int64("tgid", int64(it.tgid)),
		attribute.Int64("cpu", int64(it.cpu)))
	for i, a := range r.Args() {
		key := a.Name
		if commonKeys[key] {
			key = "arg." + key
		}
		if a.Count == 0 {
			v := dec.Value(&r, i, 0)
			if v.Kind == tracer.ValueFault {
				continue
			}
			c.attrs = append(c.attrs, attribute.KeyValue{Key: attribute.Key(key), Value: value(v)})
			continue
		}
		vals := make([]attribute.Value, a.Count)
		for k := range vals {
			vals[k] = value(dec.Value(&r, i, k))
		}
		c.attrs = append(c.attrs, attribute.Slice(key, vals...))
	}
	rec.AddAttributes(c.attrs...)
	return rec
}

// value is an argument value as an OTLP value.
func value(v tracer.Value) attribute.Value {
	switch v.Kind {
	case tracer.ValueInt:
		return attribute.Int64Value(v.Int)
	case tracer.ValueUint:
		return attribute.Int64Value(int64(v.Uint))
	case tracer.ValueString:
		return attribute.StringValue(string(v.Str))
	}
	return attribute.Value{}
}
