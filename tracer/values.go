package tracer

import "github.com/ktrace-dev/ktrace/fetchargs"

// ValueKind says what an argument value holds.
type ValueKind uint8

const (
	// ValueInt is a signed integer (s8..s64): Value.Int.
	ValueInt ValueKind = iota
	// ValueUint is an unsigned integer (u8..u64, x8..x64): Value.Uint.
	ValueUint
	// ValueString is text (string, ustring, symstr, symbol, char):
	// Value.Str.
	ValueString
	// ValueFault is a string whose read failed: the trace line prints
	// "(fault)", JSON output null.
	ValueFault
)

// Value is one argument value of a record, typed as the event's format
// file types it (the typing of AppendJSON).
type Value struct {
	Kind ValueKind
	Int  int64
	Uint uint64
	// Str aliases the record or the decoder's symbol cache: copy it to
	// keep it past the next record.
	Str []byte
}

// Args returns the arguments of r's event in format-file order: element
// k of argument i is Decoder.Value(r, i, k), for k < max(Count, 1).
func (r *Record) Args() []*fetchargs.Arg { return r.Probe.args() }

// Value returns element k (0 for a scalar) of argument i of r.
func (d *Decoder) Value(r *Record, i, k int) Value {
	a := r.Probe.args()[i]
	t := a.Type
	off := r.Probe.Layout.Offsets[i] + k*t.Size
	rec := r.Raw
	switch t.Name {
	case "string", "ustring":
		s, ok := str(rec, off)
		if !ok {
			return Value{Kind: ValueFault}
		}
		return Value{Kind: ValueString, Str: s}
	case "symstr":
		loc := raw(rec, off, 4)
		if loc>>16 == 0 {
			return Value{Kind: ValueFault}
		}
		return Value{Kind: ValueString, Str: []byte(d.symbol(raw(rec, int(loc&0xffff), 8)))}
	case "symbol":
		return Value{Kind: ValueString, Str: []byte(d.symbol(raw(rec, off, 8)))}
	case "char":
		return Value{Kind: ValueString, Str: []byte{byte(raw(rec, off, 1))}}
	}
	v := raw(rec, off, t.Size)
	if t.IsSigned {
		return Value{Kind: ValueInt, Int: signExtend(v, t.Size)}
	}
	return Value{Kind: ValueUint, Uint: v}
}

// Fork returns a decoder that prints records as d does, with caches of
// its own: d's caches of recent text belong to the goroutine that decodes
// and prints, so another goroutine printing copies of the records (an
// exporter) needs its own decoder.
func (d *Decoder) Fork() *Decoder {
	f := &Decoder{model: d.model, syms: map[uint64]string{}, bare: map[uint64]string{}}
	f.probes.Store(d.probes.Load())
	return f
}
