package tracer

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/cilium/ebpf"

	"github.com/ktrace-dev/ktrace/bpfcode"
	"github.com/ktrace-dev/ktrace/filter"
	"github.com/ktrace-dev/ktrace/trigger"
)

// Histograms: the hist triggers of traced events, counted by the events'
// programs into BPF hash maps (bpfcode's hist stage) and read back as
// trigger tables.

// Hist is one histogram: its maps, and the program part that counts into
// them (Spec, given to Config.EventOptions or AttachEvent).
type Hist struct {
	m, counts, pause *ebpf.Map
	// snap is a snapshot() action's state (bpfcode.HistSnapshot.Global).
	snap  *ebpf.Map
	nvals int
	// stack is the stacktrace key's place, nil without one.
	stack *stackSlot
	// Spec is what a probe's program needs to count into the histogram.
	// The targets of its actions (Spec.Actions[i].Target) are set by
	// whoever attaches it: Synthetics names them.
	Spec *bpfcode.Hist
	// Synthetics are the synthetic events Spec.Actions generate.
	Synthetics []string
}

// NewHist makes the histogram of hist trigger t of an event: an empty
// table of the trigger's size, keyed and summed as the trigger says. Its
// maps live until Close. others gives the histograms of the other hist
// triggers whose variables t reads (nil when it reads none).
func NewHist(t *trigger.Trigger, others func(*trigger.Hist) *Hist) (h *Hist, err error) {
	spec, synths, err := histSpec(t, others)
	if err != nil {
		return nil, err
	}
	h = &Hist{nvals: len(spec.Vals), Spec: spec, Synthetics: synths}
	if h.stack, err = stackSlotOf(t.Hist); err != nil {
		return nil, err
	}
	made := h // a failed return sets h to nil before this runs
	defer func() {
		if err != nil {
			made.Close()
		}
	}()
	if h.counts, err = ebpf.NewMap(&ebpf.MapSpec{Name: "ktrace_histc", Type: ebpf.PerCPUArray, KeySize: 4, ValueSize: bpfcode.HistCountSize, MaxEntries: 1}); err != nil {
		return nil, fmt.Errorf("tracer: creating a histogram's counts: %w", err)
	}
	if h.pause, err = ebpf.NewMap(&ebpf.MapSpec{Name: "ktrace_histp", Type: ebpf.Array, KeySize: 4, ValueSize: 4, MaxEntries: 1}); err != nil {
		return nil, fmt.Errorf("tracer: creating a histogram's pause switch: %w", err)
	}
	if h.m, err = ebpf.NewMap(&ebpf.MapSpec{
		Name:       "ktrace_hist",
		Type:       ebpf.Hash,
		KeySize:    uint32(spec.KeySize),
		ValueSize:  uint32(spec.Layout().Size()),
		MaxEntries: uint32(t.Hist.Size()),
	}); err != nil {
		return nil, fmt.Errorf("tracer: creating a histogram map: %w", err)
	}
	spec.Map, spec.Counts, spec.Pause = h.m, h.counts, h.pause
	for _, a := range spec.Actions {
		if a.Snapshot == nil {
			continue
		}
		if h.snap == nil {
			if h.snap, err = ebpf.NewMap(&ebpf.MapSpec{Name: "ktrace_hsnap", Type: ebpf.Array, KeySize: 4, ValueSize: uint32(bpfcode.HistSnapshotSize(spec.KeySize)), MaxEntries: 1}); err != nil {
				return nil, fmt.Errorf("tracer: creating a snapshot() action's state: %w", err)
			}
		}
		a.Snapshot.Global = h.snap
	}
	if err := h.SetPaused(t.Paused); err != nil {
		return nil, err
	}
	if len(spec.Actions) == 0 {
		if err := bpfcode.CheckHist(spec); err != nil {
			return nil, fmt.Errorf("tracer: %s: %w", t.Line(), err)
		}
	}
	return h, nil
}

// histSpec is the hist stage's view of hist trigger t, without its maps,
// and the synthetic events its actions generate.
func histSpec(t *trigger.Trigger, others func(*trigger.Hist) *Hist) (*bpfcode.Hist, []string, error) {
	h := t.Hist
	if h == nil {
		return nil, nil, fmt.Errorf("tracer: %s is not a hist trigger", t.Line())
	}
	unsupported := func(what string) error {
		return fmt.Errorf("tracer: %s: %s: %w", t.Line(), what, bpfcode.ErrHistUnsupported)
	}
	slots, size := h.KeyLayout()
	spec := &bpfcode.Hist{KeySize: size, Filter: t.Filter}
	stack, err := stackSlotOf(h)
	if err != nil {
		return nil, nil, unsupported(err.Error())
	}
	if stack != nil {
		spec.KeySize += stack.grow()
	}
	var exprKeys []int // the keys that are expressions, computed below
	for _, s := range slots {
		f := s.Field
		k := bpfcode.HistKey{Field: f.Field, Offset: s.Offset, Size: s.Size, Log2: f.Log2(), Log2Wraps: f.Log2Wraps(), Bucket: f.Buckets}
		if stack != nil && s.Offset > stack.at {
			k.Offset += stack.grow()
		}
		switch {
		case f.IsComputed():
			exprKeys = append(exprKeys, len(spec.Keys))
		case f.IsCPU():
			k.CPU = true
		case f.IsStacktrace():
			// The program saves more frames than the key keeps:
			// Table takes off those of the BPF path (HistStack).
			k.Stack, k.Size = true, 8*HistStackRaw
		case f.IsTimestamp():
			k.Timestamp, k.Usecs = true, f.Usecs()
		case f.Field == nil:
			return nil, nil, unsupported("key " + f.Name)
		}
		spec.Keys = append(spec.Keys, k)
	}
	if stack != nil && (len(h.Vars) > 0 || len(h.Actions) > 0 || len(h.Refs()) > 0) {
		// Their entries are looked up by the key the program makes,
		// which holds frames the kernel's key does not.
		return nil, nil, unsupported("variables and actions with a stacktrace key")
	}
	x := exprs{h: h, spec: spec}
	if err := x.refs(others); err != nil {
		return nil, nil, unsupported(err.Error())
	}
	for _, i := range exprKeys {
		e, err := x.expr(slots[i].Field, false)
		if err != nil {
			return nil, nil, unsupported("key: " + err.Error())
		}
		spec.Keys[i].Expr = e
	}
	for _, v := range h.Vals {
		switch {
		case v.IsComputed():
			e, err := x.expr(v, false)
			if err != nil {
				return nil, nil, unsupported(err.Error())
			}
			spec.Vals = append(spec.Vals, bpfcode.HistVal{Expr: e})
		case v.IsTimestamp():
			spec.Vals = append(spec.Vals, bpfcode.HistVal{Usecs: v.Usecs()})
		case v.IsHitcount():
			spec.Vals = append(spec.Vals, bpfcode.HistVal{Hitcount: true})
		case v.IsCPU():
			// common_cpu (cpu, CPU) summed: the hits' CPU numbers.
			spec.Vals = append(spec.Vals, bpfcode.HistVal{Expr: &bpfcode.HistExpr{CPU: true}})
		case v.Field == nil:
			return nil, nil, unsupported("value " + v.Name)
		case v.Log2() || v.Buckets != 0:
			return nil, nil, unsupported("transformed value " + v.Name)
		case v.Field.Class == filter.StaticString || v.Field.Class == filter.DynString || v.Field.Class == filter.RelDynString:
			// A string value: the kernel takes it and sums the
			// string's addresses in its ring buffer, a number no
			// one can reproduce; ktrace takes it too and sums 0.
			spec.Vals = append(spec.Vals, bpfcode.HistVal{Expr: &bpfcode.HistExpr{IsConst: true}})
		default:
			spec.Vals = append(spec.Vals, bpfcode.HistVal{Field: v.Field})
		}
	}
	for _, v := range h.Vars {
		if v.Field != nil && !v.IsComputed() && v.Field.Class != filter.Numeric && v.Field.Class != filter.PtrString {
			// A string variable: the string, kept in the entry.
			spec.Vars = append(spec.Vars, &bpfcode.HistExpr{Str: v.Field})
			continue
		}
		e, err := x.expr(v, false)
		if err != nil {
			return nil, nil, unsupported(fmt.Sprintf("variable %s: %v", v.Var, err))
		}
		spec.Vars = append(spec.Vars, e)
	}
	var synths []string
	tracks, saves := h.Tracks()
	for _, a := range h.Actions {
		if a.IsSnapshot() {
			// Its entries' tracked value, which the hist file does
			// not show: after the others (Entry.Track keeps their
			// order).
			tracks = append(tracks, a)
		}
	}
	spec.NTrack = len(tracks)
	for _, sv := range saves {
		e, err := x.param(sv)
		if err != nil {
			return nil, nil, unsupported(fmt.Sprintf("save(%s): %v", sv.Var, err))
		}
		spec.Saves = append(spec.Saves, e)
	}
	for _, a := range h.Actions {
		act := &bpfcode.HistAction{Save: a.IsSave()}
		if a.IsSnapshot() {
			// Its maps: Global made by NewHist, Queue by whoever
			// attaches it (SetSnapshotQueue).
			act.Snapshot = &bpfcode.HistSnapshot{}
		}
		if a.IsOnMax() || a.IsOnChange() {
			act.Track, act.TrackIdx = '!', slices.Index(tracks, a)
			if a.IsOnMax() {
				act.Track = '>'
			}
			ref, err := x.param(a.Tracked())
			if err != nil || ref.Ref == 0 {
				return nil, nil, unsupported(fmt.Sprintf("the variable onmax() or onchange() follows: %v", err))
			}
			act.TrackRef = ref.Ref
		}
		if a.IsTrace() {
			for _, p := range a.ParamFields() {
				e, err := x.param(p)
				if err != nil {
					return nil, nil, unsupported(fmt.Sprintf("parameter: %v", err))
				}
				act.Params = append(act.Params, e)
			}
		}
		spec.Actions = append(spec.Actions, act)
		synth := ""
		if a.IsTrace() {
			synth = a.Synthetic()
		}
		synths = append(synths, synth)
	}
	return spec, synths, nil
}

// stackSlot is where a histogram's stacktrace key lies: at the same
// offset in the trigger's key (size bytes, HistStackDepth frames) and in
// the key its programs make (HistStackRaw frames), which is longer by
// grow bytes from there on.
type stackSlot struct{ at, size int }

func (s *stackSlot) grow() int { return 8*HistStackRaw - s.size }

// stackSlotOf is h's stacktrace key, nil when it has none.
func stackSlotOf(h *trigger.Hist) (*stackSlot, error) {
	slots, _ := h.KeyLayout()
	var stack *stackSlot
	for _, s := range slots {
		f := s.Field
		if !f.IsStacktrace() {
			continue
		}
		switch {
		case f.Field != nil:
			return nil, fmt.Errorf("key %s.stacktrace", f.Name)
		case stack != nil:
			return nil, errors.New("two stacktrace keys")
		}
		stack = &stackSlot{at: s.Offset, size: s.Size}
	}
	return stack, nil
}

// kernelKeys turns the entries' keys, as the programs made them, into the
// kernel's: each stack without the BPF path's frames and cut to the
// kernel's depth (HistStack). Entries whose keys become equal are one
// entry, their sums added.
func (s *stackSlot) kernelKeys(entries []trigger.Entry, names trigger.Names) []trigger.Entry {
	raw := 8 * HistStackRaw
	at := map[string]int{}
	var out []trigger.Entry
	for _, e := range entries {
		if len(e.Key) < s.at+raw {
			continue
		}
		var pcs []uint64
		for off := s.at; off < s.at+raw; off += 8 {
			pcs = append(pcs, binary.LittleEndian.Uint64(e.Key[off:]))
		}
		key := make([]byte, len(e.Key)-s.grow())
		copy(key, e.Key[:s.at])
		copy(key[s.at+s.size:], e.Key[s.at+raw:])
		for i, pc := range HistStack(pcs, names) {
			binary.LittleEndian.PutUint64(key[s.at+8*i:], pc)
		}
		if i, ok := at[string(key)]; ok {
			for j := range min(len(out[i].Sums), len(e.Sums)) {
				out[i].Sums[j] += e.Sums[j]
			}
			continue
		}
		at[string(key)] = len(out)
		e.Key = key
		out = append(out, e)
	}
	return out
}

// exprs turns a hist trigger's computed fields into the hist stage's
// expressions.
type exprs struct {
	h    *trigger.Hist
	spec *bpfcode.Hist
}

// refs resolves the trigger's variable references: to its own variables,
// or to other triggers' (whose histograms others gives).
func (x *exprs) refs(others func(*trigger.Hist) *Hist) error {
	for _, r := range x.h.Refs() {
		v := r.RefVar
		if v == nil || v.Owner() == nil {
			return fmt.Errorf("reference $%s without its variable", r.Expr)
		}
		o := v.Owner()
		idx := slices.Index(o.Vars, v)
		if idx < 0 {
			return fmt.Errorf("variable $%s not found", v.Var)
		}
		ref := bpfcode.HistRef{Var: idx, ReadOnce: x.h.ReadOnce(r)}
		if o == x.h {
			ref.Self = true
		} else {
			var oh *Hist
			if others != nil {
				oh = others(o)
			}
			if oh == nil {
				return fmt.Errorf("variable $%s of a histogram ktrace does not count", v.Var)
			}
			if oh.Spec.KeySize > x.spec.KeySize {
				// The kernel's resolve_var_refs looks the variable's
				// histogram up with this hit's key, as many bytes as
				// that histogram's keys take: a prefix of this key
				// when they are no longer. Longer ones would read
				// past the key.
				return fmt.Errorf("variable $%s of a histogram with longer keys", v.Var)
			}
			ref.Map, ref.Layout = oh.m, oh.Spec.Layout()
		}
		x.spec.Refs = append(x.spec.Refs, ref)
	}
	return nil
}

// expr is field f as an expression; self allows references to the
// trigger's own variables (which the kernel resolves only for actions).
func (x *exprs) expr(f *trigger.HistField, self bool) (*bpfcode.HistExpr, error) {
	switch {
	case f.IsString():
		return nil, fmt.Errorf("string %s", f.Var)
	case f.IsAlias():
		if len(f.Operands) != 1 {
			return nil, fmt.Errorf("alias %s", f.Var)
		}
		return x.expr(f.Operands[0], self)
	case f.IsVarRef():
		i := slices.Index(x.h.Refs(), f)
		if i < 0 {
			return nil, fmt.Errorf("reference $%s", f.Expr)
		}
		if x.spec.Refs[i].Self && !self {
			return nil, fmt.Errorf("$%s, a variable of the same trigger, in an expression", f.Expr)
		}
		return &bpfcode.HistExpr{Ref: i + 1}, nil
	case f.IsConst():
		return &bpfcode.HistExpr{IsConst: true, Const: f.Const}, nil
	case f.IsExpr():
		e := &bpfcode.HistExpr{Op: f.Op}
		if len(f.Operands) == 0 || (f.Op != 'u' && len(f.Operands) != 2) {
			return nil, fmt.Errorf("expression %s", f.Expr)
		}
		var err error
		if e.X, err = x.expr(f.Operands[0], self); err != nil {
			return nil, err
		}
		if f.Op != 'u' {
			if e.Y, err = x.expr(f.Operands[1], self); err != nil {
				return nil, err
			}
		}
		return e, nil
	case f.Log2() || f.Buckets != 0:
		return nil, fmt.Errorf("transformed field %s", f.Name)
	case f.IsTimestamp():
		return &bpfcode.HistExpr{Timestamp: true, Usecs: f.Usecs()}, nil
	case f.IsStacktrace():
		// Only a variable takes it (bpfcode checks).
		return &bpfcode.HistExpr{Stack: true}, nil
	case f.IsCPU():
		return &bpfcode.HistExpr{CPU: true}, nil
	case f.Field != nil:
		return &bpfcode.HistExpr{Field: f.Field}, nil
	}
	return nil, fmt.Errorf("field %s", f.Name)
}

// param is a trace action's parameter: a variable, read through the
// trigger's reference to it, or a field of the event.
func (x *exprs) param(p *trigger.HistField) (*bpfcode.HistExpr, error) {
	if p.Owner() == nil {
		if p.IsString() || (p.Field != nil && p.Field.Class != filter.Numeric && p.Field.Class != filter.PtrString) {
			// A string field of the event, copied into a synthetic
			// event's string field.
			if p.Field == nil || p.IsComputed() {
				return nil, fmt.Errorf("string %s", p.Var)
			}
			return &bpfcode.HistExpr{Str: p.Field}, nil
		}
		return x.expr(p, false)
	}
	for i, r := range x.h.Refs() {
		if r.RefVar == p {
			return &bpfcode.HistExpr{Ref: i + 1}, nil
		}
	}
	return nil, fmt.Errorf("$%s without a reference", p.Var)
}

// SetPaused pauses the histogram (its programs count nothing) or lets it
// count again.
func (h *Hist) SetPaused(on bool) error {
	v := uint32(0)
	if on {
		v = 1
	}
	if err := h.pause.Put(uint32(0), v); err != nil {
		return fmt.Errorf("tracer: pausing a histogram: %w", err)
	}
	return nil
}

// Paused reads whether the histogram is paused (an enable_hist or
// disable_hist trigger may have changed it).
func (h *Hist) Paused() (bool, error) {
	var v uint32
	if err := h.pause.Lookup(uint32(0), &v); err != nil {
		return false, fmt.Errorf("tracer: reading a histogram's pause switch: %w", err)
	}
	return v != 0, nil
}

// PauseSwitch is the map Spec.Pause names.
func (h *Hist) PauseSwitch() *ebpf.Map { return h.pause }

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

// Hits reads the hits the histogram counted, summed over the CPUs (its
// table's Totals: Hits).
func (h *Hist) Hits() (uint64, error) {
	var per [][2]uint64
	if err := h.counts.Lookup(uint32(0), &per); err != nil {
		return 0, fmt.Errorf("tracer: histogram counts: %w", err)
	}
	var n uint64
	for _, c := range per {
		n += c[0]
	}
	return n, nil
}

// Table reads the histogram. names resolves the frames of a stacktrace
// key, whose entries are merged by the key the kernel would have made.
func (h *Hist) Table(names trigger.Names) (*trigger.Table, error) {
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
		lay := h.Spec.Layout()
		for i := range lay.NTrack {
			e.Track = append(e.Track, binary.LittleEndian.Uint64(val[lay.TrackOff(i):]))
		}
		for i, str := range lay.Saves {
			at := val[lay.SaveOff(i):]
			if !str {
				e.Saved = append(e.Saved, binary.LittleEndian.Uint64(at))
				e.SavedStr = append(e.SavedStr, "")
				continue
			}
			at = at[:bpfcode.StrVarLen]
			if j := bytes.IndexByte(at, 0); j >= 0 {
				at = at[:j]
			}
			e.Saved = append(e.Saved, 0)
			e.SavedStr = append(e.SavedStr, string(at))
		}
		comm := val[lay.CommOff():][:16]
		if i := bytes.IndexByte(comm, 0); i >= 0 {
			comm = comm[:i]
		}
		e.Comm = string(comm)
		tab.Entries = append(tab.Entries, e)
	}
	if err := it.Err(); err != nil {
		return nil, fmt.Errorf("tracer: reading a histogram: %w", err)
	}
	if h.stack != nil {
		tab.Entries = h.stack.kernelKeys(tab.Entries, names)
	}
	if err := h.snapshotTaken(tab); err != nil {
		return nil, err
	}
	return tab, nil
}

// SetSnapshotQueue gives the histogram's snapshot() actions the queue
// their swaps go to (bpfcode.EventTrigger.Queue).
func (h *Hist) SetSnapshotQueue(q *ebpf.Map) {
	for _, a := range h.Spec.Actions {
		if a.Snapshot != nil {
			a.Snapshot.Queue = q
		}
	}
}

// HasSnapshot reports whether the histogram has a snapshot() action.
func (h *Hist) HasSnapshot() bool { return h.snap != nil }

// snapshotTaken reads the snapshot() action's last snapshot into tab.
func (h *Hist) snapshotTaken(tab *trigger.Table) error {
	if h.snap == nil {
		return nil
	}
	var val []byte
	if err := h.snap.Lookup(uint32(0), &val); err != nil {
		return fmt.Errorf("tracer: a snapshot() action's state: %w", err)
	}
	if binary.LittleEndian.Uint64(val[8:]) == 0 {
		return nil
	}
	comm := val[16:32]
	if i := bytes.IndexByte(comm, 0); i >= 0 {
		comm = comm[:i]
	}
	tab.Snapshot = &trigger.Entry{Key: append([]byte(nil), val[32:]...), Comm: string(comm), Track: []uint64{binary.LittleEndian.Uint64(val)}}
	return nil
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
	for _, m := range []**ebpf.Map{&h.m, &h.counts, &h.pause, &h.snap} {
		if *m != nil {
			errs = append(errs, (*m).Close())
			*m = nil
		}
	}
	return errors.Join(errs...)
}
