package tracer

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/cilium/ebpf"

	"github.com/ktrace-dev/ktrace/bpfcode"
	"github.com/ktrace-dev/ktrace/trigger"
)

// Histograms: the hist triggers of traced events, counted by the events'
// programs into BPF hash maps (bpfcode's hist stage) and read back as
// trigger tables.

// Hist is one histogram: its maps, and the program part that counts into
// them (Spec, given to Config.EventOptions or AttachEvent).
type Hist struct {
	m, counts *ebpf.Map
	nvals     int
	// Spec is what a probe's program needs to count into the histogram.
	Spec *bpfcode.Hist
}

// NewHist makes the histogram of hist trigger t of an event: an empty
// table of the trigger's size, keyed and summed as the trigger says. Its
// maps live until Close.
func NewHist(t *trigger.Trigger) (h *Hist, err error) {
	spec, err := histSpec(t)
	if err != nil {
		return nil, err
	}
	h = &Hist{nvals: len(spec.Vals), Spec: spec}
	defer func() {
		if err != nil {
			h.Close()
		}
	}()
	if h.counts, err = ebpf.NewMap(&ebpf.MapSpec{Name: "ktrace_histc", Type: ebpf.PerCPUArray, KeySize: 4, ValueSize: bpfcode.HistCountSize, MaxEntries: 1}); err != nil {
		return nil, fmt.Errorf("tracer: creating a histogram's counts: %w", err)
	}
	if h.m, err = ebpf.NewMap(&ebpf.MapSpec{
		Name:       "ktrace_hist",
		Type:       ebpf.Hash,
		KeySize:    uint32(spec.KeySize),
		ValueSize:  uint32(bpfcode.HistValueSize(len(spec.Vals))),
		MaxEntries: uint32(t.Hist.Size()),
	}); err != nil {
		return nil, fmt.Errorf("tracer: creating a histogram map: %w", err)
	}
	spec.Map, spec.Counts = h.m, h.counts
	if err := bpfcode.CheckHist(spec); err != nil {
		return nil, fmt.Errorf("tracer: %s: %w", t.Line(), err)
	}
	return h, nil
}

// histSpec is the hist stage's view of hist trigger t, without its maps.
func histSpec(t *trigger.Trigger) (*bpfcode.Hist, error) {
	h := t.Hist
	if h == nil {
		return nil, fmt.Errorf("tracer: %s is not a hist trigger", t.Line())
	}
	unsupported := func(what string) error {
		return fmt.Errorf("tracer: %s: %s: %w", t.Line(), what, bpfcode.ErrHistUnsupported)
	}
	if len(h.Vars) > 0 {
		return nil, unsupported("variables")
	}
	if len(h.Actions) > 0 {
		return nil, unsupported("handlers (onmatch, onmax, onchange)")
	}
	for _, f := range append(append([]*trigger.HistField(nil), h.Keys...), h.Vals...) {
		if f.IsComputed() {
			return nil, unsupported("expressions and variable references")
		}
	}
	slots, size := h.KeyLayout()
	spec := &bpfcode.Hist{KeySize: size, Filter: t.Filter}
	for _, s := range slots {
		f := s.Field
		k := bpfcode.HistKey{Field: f.Field, Offset: s.Offset, Size: s.Size, Log2: f.Log2(), Bucket: f.Buckets}
		switch {
		case f.IsCPU():
			k.CPU = true
		case f.IsStacktrace():
			return nil, unsupported("stacktrace keys")
		case f.IsTimestamp():
			return nil, unsupported("common_timestamp keys")
		case f.Field == nil:
			return nil, unsupported("key " + f.Name)
		}
		spec.Keys = append(spec.Keys, k)
	}
	for _, v := range h.Vals {
		switch {
		case v.IsTimestamp():
			spec.Vals = append(spec.Vals, bpfcode.HistVal{Usecs: v.Usecs()})
		case v.IsHitcount():
			spec.Vals = append(spec.Vals, bpfcode.HistVal{Hitcount: true})
		case v.Field == nil:
			return nil, unsupported("value " + v.Name)
		case v.Log2() || v.Buckets != 0:
			return nil, unsupported("transformed value " + v.Name)
		default:
			spec.Vals = append(spec.Vals, bpfcode.HistVal{Field: v.Field})
		}
	}
	return spec, nil
}

// resetCounts zeroes the histogram's hits and drops on every CPU.
func (h *Hist) resetCounts() error {
	cpus, err := ebpf.PossibleCPU()
	if err != nil {
		return fmt.Errorf("tracer: possible CPUs: %w", err)
	}
	if err := h.counts.Put(uint32(0), make([][2]uint64, cpus)); err != nil {
		return fmt.Errorf("tracer: histogram counts: %w", err)
	}
	return nil
}

// Table reads the histogram.
func (h *Hist) Table() (*trigger.Table, error) {
	tab := &trigger.Table{}
	var per [][2]uint64
	if err := h.counts.Lookup(uint32(0), &per); err != nil {
		return nil, fmt.Errorf("tracer: histogram counts: %w", err)
	}
	for _, c := range per {
		tab.Hits += c[0]
		tab.Drops += c[1]
	}
	var key, val []byte
	it := h.m.Iterate()
	for it.Next(&key, &val) {
		e := trigger.Entry{Key: append([]byte(nil), key...)}
		for i := 0; i <= h.nvals; i++ {
			e.Sums = append(e.Sums, binary.LittleEndian.Uint64(val[8*i:]))
		}
		comm := val[bpfcode.HistCommOffset(h.nvals):][:16]
		if i := bytes.IndexByte(comm, 0); i >= 0 {
			comm = comm[:i]
		}
		e.Comm = string(comm)
		tab.Entries = append(tab.Entries, e)
	}
	if err := it.Err(); err != nil {
		return nil, fmt.Errorf("tracer: reading a histogram: %w", err)
	}
	return tab, nil
}

// Clear empties the histogram and zeroes its totals (a "clear" command).
func (h *Hist) Clear() error {
	var keys [][]byte
	var key, val []byte
	it := h.m.Iterate()
	for it.Next(&key, &val) {
		keys = append(keys, append([]byte(nil), key...))
	}
	var errs []error
	if err := it.Err(); err != nil {
		errs = append(errs, err)
	}
	for _, k := range keys {
		if err := h.m.Delete(k); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
			errs = append(errs, err)
		}
	}
	errs = append(errs, h.resetCounts())
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("tracer: clearing a histogram: %w", err)
	}
	return nil
}

// Close releases the histogram's maps; the programs that count into them
// keep them until they are detached.
func (h *Hist) Close() error {
	var errs []error
	for _, m := range []**ebpf.Map{&h.m, &h.counts} {
		if *m != nil {
			errs = append(errs, (*m).Close())
			*m = nil
		}
	}
	return errors.Join(errs...)
}
