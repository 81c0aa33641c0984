package live

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/cilium/ebpf"

	"github.com/ktrace-dev/ktrace/bpfcode"
	"github.com/ktrace-dev/ktrace/tracefs"
)

// Snapshot triggers run in the events' programs: a firing pushes its time
// and task onto a queue map that every program shares, and the FS swaps
// its trace buffers at those times when it next reads them
// (tracefs.Snapshotter), once the records from before have arrived.

var _ tracefs.Snapshotter = (*Backend)(nil)

// snapshotQueueSize bounds the firings kept between two reads of the
// FS's buffers; a push on a full queue fails and that swap is lost, as a
// kernel snapshot that cannot be taken.
const snapshotQueueSize = 4096

// snapshotQueue returns the queue the snapshot triggers push onto, made
// at first use.
func (b *Backend) snapshotQueue() (*ebpf.Map, error) {
	return b.snapQ.get(func() (*ebpf.Map, error) {
		m, err := ebpf.NewMap(&ebpf.MapSpec{Name: "ktrace_snap", Type: ebpf.Queue, ValueSize: bpfcode.SnapshotRecordSize, MaxEntries: snapshotQueueSize})
		if err != nil {
			return nil, fmt.Errorf("creating the snapshot triggers' queue: %w", err)
		}
		return m, nil
	})
}

// Snapshots takes the snapshot triggers' firings off the queue, oldest
// first.
func (b *Backend) Snapshots() []tracefs.SnapshotHit {
	m := b.snapQ.m
	if m == nil {
		return nil
	}
	var out []tracefs.SnapshotHit
	var buf [bpfcode.SnapshotRecordSize]byte
	for {
		if err := m.LookupAndDelete(nil, &buf); err != nil {
			if !errors.Is(err, ebpf.ErrKeyNotExist) && b.warn != nil {
				fmt.Fprintf(b.warn, "ktrace: reading the snapshot triggers' queue: %v\n", err)
			}
			return out
		}
		out = append(out, tracefs.SnapshotHit{
			TS:   binary.LittleEndian.Uint64(buf[0:]),
			PID:  int(binary.LittleEndian.Uint32(buf[8:])),
			CPU:  int(binary.LittleEndian.Uint32(buf[12:])),
			Comm: cString(buf[16:32]),
		})
	}
}
