package tracer

import (
	"errors"
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/ktrace-dev/ktrace/bpfcode"
	"github.com/ktrace-dev/ktrace/fetchargs"
)

// Maps are the kernel objects a session's programs share.
type Maps struct {
	Ring, Scratch, Counters, EntryDepth, EntryData, Probes *ebpf.Map
	// Follow is the process tree of record --follow (nil without it).
	Follow *ebpf.Map
	// IrqState is the interrupt flags taken for event probes on static
	// events (bpfcode.IrqStateProgram; nil until one is attached, or
	// when its kprobe could not be).
	IrqState *ebpf.Map
}

// The default ring buffer holds a burst of BurstEvents of the recording's
// largest events before the reader takes any: the smallest power of two
// that does, between MinRingSize and MaxDefaultRingSize. A bare kprobe
// (64 bytes with the ring's own header) gets 16 MiB, a kprobe with a
// register and $comm (about 90 bytes) 32 MiB. The kernel allocates and
// clears every page when it creates the ring, so a ring no bigger than
// the burst needs also starts faster.
const (
	BurstEvents        = 200000
	MinRingSize        = 1 << 20
	MaxDefaultRingSize = 64 << 20
	// burstString is what a string argument is counted for in a burst
	// (records carry only their used bytes): a task's comm.
	burstString = 16
	// ringHeader is the ring buffer's own header of each record.
	ringHeader = 8
)

// burstRingSize is the default ring buffer size for events of perEvent
// bytes (ktrace's header included).
func burstRingSize(perEvent int) int {
	size := MinRingSize
	for size < BurstEvents*(ringHeader+perEvent) && size < MaxDefaultRingSize {
		size <<= 1
	}
	return size
}

// SmallestDefaultRing is the default ring buffer size of the smallest
// events (a header and nothing else): what a front end prepares
// (PrepareRing) before it knows the events.
var SmallestDefaultRing = burstRingSize(fetchargs.HeaderSize)

// ringMapName is the ring buffer map's name.
const ringMapName = "ktrace_ring"

// ringSpec is the ring buffer map of size bytes.
func ringSpec(size int) *ebpf.MapSpec {
	return &ebpf.MapSpec{Name: ringMapName, Type: ebpf.RingBuf, MaxEntries: uint32(size)}
}

// NewMaps creates the maps for plan p.
func NewMaps(p *Plan) (*Maps, error) { return newMaps(p, nil) }

// newMaps creates the maps for plan p, with ring as its ring buffer when
// it is not nil (a PreparedRing of the plan's size).
func newMaps(p *Plan, ring *ebpf.Map) (*Maps, error) {
	ringSize := p.RingSize
	probes := max(1, len(p.Probes))
	entries := 16384
	if p.Shared {
		probes = max(probes, p.Capacity)
		entries = 4096
	}
	cpus, err := ebpf.PossibleCPU()
	if err != nil {
		return nil, fmt.Errorf("tracer: possible CPUs: %w", err)
	}
	m := &Maps{Ring: ring}
	ok := false
	defer func() {
		if !ok {
			m.Close()
		}
	}()
	scratch := p.ScratchSize
	if scratch < 16 {
		scratch = 16
	}
	type slot struct {
		dst  **ebpf.Map
		spec *ebpf.MapSpec
	}
	specs := []slot{
		{&m.Scratch, &ebpf.MapSpec{Name: "ktrace_scratch", Type: ebpf.Array, KeySize: 4, ValueSize: uint32(scratch), MaxEntries: uint32(cpus)}},
		{&m.Probes, &ebpf.MapSpec{Name: "ktrace_probes", Type: ebpf.Array, KeySize: 4, ValueSize: 16, MaxEntries: uint32(probes)}},
		{&m.Counters, &ebpf.MapSpec{Name: "ktrace_count", Type: ebpf.PerCPUArray, KeySize: 4, ValueSize: bpfcode.CounterSize, MaxEntries: uint32(probes)}},
	}
	if ring == nil {
		specs = append(specs, slot{&m.Ring, ringSpec(ringSize)})
	}
	if p.EntryDataSize > 0 {
		specs = append(specs,
			slot{&m.EntryDepth, &ebpf.MapSpec{Name: "ktrace_edepth", Type: ebpf.LRUHash, KeySize: 16, ValueSize: 8, MaxEntries: uint32(entries)}},
			slot{&m.EntryData, &ebpf.MapSpec{Name: "ktrace_edata", Type: ebpf.LRUHash, KeySize: 16, ValueSize: uint32(p.EntryDataSize), MaxEntries: uint32(entries)}},
		)
	}
	for _, s := range specs {
		mp, err := ebpf.NewMap(s.spec)
		if err != nil {
			return nil, fmt.Errorf("tracer: creating map %s: %w", s.spec.Name, err)
		}
		*s.dst = mp
	}
	ok = true
	return m, nil
}

// Compiler returns the compiler's view of the maps.
func (m *Maps) Compiler() *bpfcode.Maps {
	fm := &bpfcode.Maps{Ring: m.Ring, Scratch: m.Scratch, Counters: m.Counters, Probes: m.Probes}

	if m.Follow != nil {
		fm.Follow = m.Follow
	}
	if m.EntryDepth != nil {
		fm.EntryDepth, fm.EntryData = m.EntryDepth, m.EntryData
	}
	if m.IrqState != nil {
		fm.IrqState = m.IrqState
	}
	return fm
}

// Counts returns the hits and misses of probe index i, summed over CPUs.
func (m *Maps) Counts(i uint32) (hits, misses uint64, err error) {
	per, err := m.CPUCounts(i)
	if err != nil {
		return 0, 0, err
	}
	for _, v := range per {
		hits += v[0]
		misses += v[1]
	}
	return hits, misses, nil
}

// CPUCounts returns the {hits, misses} of probe index i on each possible
// CPU.
func (m *Maps) CPUCounts(i uint32) ([][2]uint64, error) {
	var per [][2]uint64
	if err := m.Counters.Lookup(i, &per); err != nil {
		return nil, fmt.Errorf("tracer: counters of probe %d: %w", i, err)
	}
	return per, nil
}

// Close releases every map.
func (m *Maps) Close() error {
	var errs []error
	for _, mp := range []*ebpf.Map{m.Ring, m.Scratch, m.Counters, m.EntryDepth, m.EntryData, m.Probes, m.Follow, m.IrqState} {
		if mp != nil {
			errs = append(errs, mp.Close())
		}
	}
	return errors.Join(errs...)
}

// resetCounts zeroes probe index i's counters on every CPU, for an index
// a session hands to a newly attached probe.
func (m *Maps) resetCounts(i uint32) error {
	cpus, err := ebpf.PossibleCPU()
	if err != nil {
		return fmt.Errorf("tracer: possible CPUs: %w", err)
	}
	if err := m.Counters.Put(i, make([][2]uint64, cpus)); err != nil {
		return fmt.Errorf("tracer: counters of probe %d: %w", i, err)
	}
	return nil
}
