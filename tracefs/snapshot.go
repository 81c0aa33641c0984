package tracefs

import (
	"fmt"
	"syscall"

	"github.com/ktrace-dev/ktrace/trigger"
)

// The snapshot file and its spare buffer, as the kernel's
// CONFIG_TRACER_SNAPSHOT has them (Documentation/trace/ftrace.rst,
// "Snapshot"): writing 1 allocates the spare buffer and swaps it with the
// trace's, 0 frees it, any other number clears it. The snapshot trigger
// and a hist trigger's snapshot() action allocate it when they are added;
// the trigger swaps when it fires (a Snapshotter backend reports when).

// Snapshotter is implemented by backends whose programs run snapshot
// triggers. Snapshots returns the swaps the triggers took since the last
// call, oldest first. The FS asks after Syncer.Sync, so every record from
// before a swap has arrived.
type Snapshotter interface {
	Snapshots() []SnapshotHit
}

// SnapshotHit is one firing of a snapshot trigger.
type SnapshotHit struct {
	// TS is the swap's time (CLOCK_MONOTONIC ns, the records' clock): a
	// record older than TS was in the buffer the swap put aside.
	TS uint64
	// The task and CPU of the hit that fired it.
	PID  int
	CPU  int
	Comm string
}

// snapshotHelp follows the header of an empty snapshot file (the kernel's
// print_snapshot_help for the whole buffer); the verb says whether the
// spare buffer is allocated or freed.
const snapshotHelp = `#
# * Snapshot is %s *
#
# Snapshot commands:
# echo 0 > snapshot : Clears and frees snapshot buffer
# echo 1 > snapshot : Allocates snapshot buffer, if not already allocated.
#                      Takes a snapshot of the main buffer.
# echo 2 > snapshot : Clears snapshot buffer (but does not allocate or free)
#                      (Doesn't have to be '2' works with any number that
#                       is not a '0' or '1')
`

// allocSnapshot allocates the spare buffer if it is not. Called with f.mu
// held.
func (f *FS) allocSnapshot() {
	if f.snap == nil {
		f.snap = &traceRing{limit: f.ring.limit}
	}
}

// swapAt swaps the spare buffer in at time ts: the trace's entries older
// than ts go aside (with the counts of their buffer), and the trace goes
// on in the spare buffer, after what it held. Called with f.mu held and
// the spare buffer allocated.
func (f *FS) swapAt(ts uint64) {
	old := f.ring
	i := len(old.entries)
	for i > 0 && old.entries[i-1].ts >= ts {
		i--
	}
	later := append([]traceEntry(nil), old.entries[i:]...)
	aside := old
	aside.entries = old.entries[:i:i]
	aside.bytes = 0
	for _, e := range aside.entries {
		aside.bytes += e.size()
	}
	f.ring = *f.snap
	f.ring.limit = old.limit
	for _, e := range later {
		f.ring.add(e)
	}
	*f.snap = aside
}

// takeSnapshots applies the swaps the backend's triggers took. It must be
// called without f.mu, after the backend passed on its records.
func (f *FS) takeSnapshots() {
	s, ok := f.b.(Snapshotter)
	if !ok {
		return
	}
	hits := s.Snapshots()
	if len(hits) == 0 {
		return
	}
	on := f.tracingOnNow()
	var off bool
	f.mu.Lock()
	for _, h := range hits {
		if f.snap == nil {
			// Freed after the trigger was added.
			if on && f.snapshotLost(h) {
				on, off = false, true
			}
			continue
		}
		f.swapAt(h.TS)
	}
	f.mu.Unlock()
	if off {
		if tb, ok := f.b.(TracingBackend); ok {
			tb.SetTracingOn(false)
		}
	}
}

// snapshotLost is a snapshot trigger firing with no spare buffer: the
// kernel's tracing_snapshot says so in the trace, from the task that hit
// the event, and stops tracing; what was recorded from then on is
// dropped. It reports whether it stopped tracing. Called with f.mu held.
func (f *FS) snapshotLost(h SnapshotHit) bool {
	i := len(f.ring.entries)
	for i > 0 && f.ring.entries[i-1].ts >= h.TS {
		i--
	}
	for _, e := range f.ring.entries[i:] {
		f.ring.bytes -= e.size()
	}
	f.ring.entries = f.ring.entries[:i]
	for _, msg := range []string{"*** SNAPSHOT NOT ALLOCATED ***", "*** stopping trace here!   ***"} {
		line := fmt.Sprintf(" [%03d] ...2. %5d.%06d: tracing_snapshot_instance_cond: %s\n", h.CPU, h.TS/1e9, h.TS%1e9/1e3, msg)
		f.ring.add(traceEntry{ts: h.TS, text: line, pid: h.PID, task: true})
	}
	if f.comms == nil {
		f.comms = map[int]string{}
	}
	f.comms[h.PID] = h.Comm
	f.tracingOn = false
	return true
}

// snapshotText is the snapshot file: the trace's header and entries of
// the spare buffer, or, when it holds none, whether it is allocated and
// the commands.
func (f *FS) snapshotText() string {
	f.sync()
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.snap == nil || len(f.snap.entries) == 0 {
		state := "freed"
		if f.snap != nil {
			state = "allocated"
		}
		return "# tracer: " + f.tracerLocked() + "\n#\n" + fmt.Sprintf(snapshotHelp, state)
	}
	return f.ringText(f.snap)
}

// writeSnapshot is a write to the snapshot file (tracing_snapshot_write):
// 0 frees the spare buffer (EBUSY while a hist trigger's snapshot()
// needs it), 1 allocates it and swaps it in now, another number clears
// it.
func (f *FS) writeSnapshot(p []byte) (int, error) {
	v, err := parseUlong(p)
	if err != nil {
		return 0, err
	}
	f.sync()
	cond := v == 0 && f.condSnapshot()
	f.mu.Lock()
	defer f.mu.Unlock()
	switch v {
	case 0:
		if cond {
			return 0, syscall.EBUSY
		}
		f.snap = nil
	case 1:
		f.allocSnapshot()
		f.swapAt(^uint64(0))
	default:
		if f.snap != nil {
			f.snap.clear()
		}
	}
	return len(p), nil
}

// condSnapshot reports whether a hist trigger has a snapshot() action
// (the kernel's conditional snapshot, which keeps the spare buffer).
func (f *FS) condSnapshot() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, l := range f.triggers {
		for _, h := range l.Hists() {
			if h.HasSnapshot() {
				return true
			}
		}
	}
	return false
}

// addsSnapshot reports whether list l, once saved as before, gained a
// trigger that needs the spare buffer: a snapshot trigger or a hist
// trigger with a snapshot() action.
func addsSnapshot(before trigger.Saved, l *trigger.List) bool {
	had := map[*trigger.Trigger]bool{}
	for _, t := range before.Triggers() {
		had[t] = true
	}
	for _, t := range l.Triggers {
		if had[t] {
			continue
		}
		if t.Cmd == "snapshot" || (t.Hist != nil && t.Hist.HasSnapshot()) {
			return true
		}
	}
	return false
}
