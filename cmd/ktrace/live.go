package main

import (
	"os"

	"github.com/ktrace-dev/ktrace/events"
	"github.com/ktrace-dev/ktrace/tracefs"
	"github.com/ktrace-dev/ktrace/tracefs/live"
)

// newTraceWorld is the world of `ktrace sh` (mount nil) and `ktrace mount`
// (mount: the mount's ownership): over the live backend when probes can
// attach to the running kernel, else over the emulation alone. note is the
// one stderr line naming the backend, live whether it is the live one;
// close detaches whatever is still attached. For a mount the server's own
// hits are dropped: its reads of the probed functions would otherwise feed
// the ring while it serves them.
func (e *env) newTraceWorld(mount *mountAccess) (w *world, note string, isLive bool, close func()) {
	if !live.Available(e.model) {
		return e.newWorldFor(mount), backendNote, false, func() {}
	}
	reg := events.NewRegistry(e.model, e.dialect)
	lb := live.New(reg, e.model, os.Stderr)
	lb.Reaper = reaperExe()
	if mount != nil {
		lb.IgnorePID = uint32(os.Getpid())
	}
	fsys := tracefs.New(lb, e.tracefsOptions(true, mount))
	lb.Record = fsys.RecordTask
	lb.TraceOptions = fsys
	return &world{reg: reg, fs: fsys}, live.Note, true, lb.Close
}
