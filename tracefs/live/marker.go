package live

import (
	"encoding/binary"
	"fmt"
	"runtime"
	"unsafe"

	"github.com/cilium/ebpf"

	"github.com/ktrace-dev/ktrace/bpfcode"
	"github.com/ktrace-dev/ktrace/fetchargs"
	"github.com/ktrace-dev/ktrace/kernel"
	"github.com/ktrace-dev/ktrace/tracefs"
)

// The trace_marker's event (ftrace/print) has no tracepoint a program
// could attach to: the kernel's tracing_mark_write runs its triggers
// itself. ktrace takes every trace_marker write, so it does the same:
// the event's program (bpfcode.CompileMarkerHist) is run on the write's
// record through BPF_PROG_TEST_RUN, and counts its histograms, runs its
// triggers and generates synthetic events in the kernel, with the maps
// the other events' programs use.

// markerMax is the most text a trace_marker write records
// (TRACE_MARKER_MAX_SIZE).
const markerMax = 4096

var _ tracefs.MarkerTriggers = (*Backend)(nil)

// MarkerHit runs the trace_marker event's triggers on one write: text
// from the task pid (comm, on cpu) at ts (CLOCK_MONOTONIC ns, the time
// its trace entry gets). It does nothing when the event has no triggers.
func (b *Backend) MarkerHit(pid int, comm string, cpu int, ts uint64, text []byte) error {
	b.markerMu.Lock()
	defer b.markerMu.Unlock()
	b.mu.Lock()
	sh := b.hists.static[evID{kernel.FtraceSystem, "print", staticSerial}]
	var prog *ebpf.Program
	size := 0
	if sh != nil {
		prog, size = sh.prog, sh.size
	}
	ip := b.markerIP()
	id := 0
	if se := b.staticEvent(kernel.FtraceSystem, "print"); se != nil {
		id = se.ID
	}
	b.mu.Unlock()
	if prog == nil {
		return nil
	}
	// The header (time, CPU, comm), then the record: common_type,
	// common_pid, ip (tracing_mark_write's own address) and the text
	// with its NUL, zeros after.
	// The program reads it with bpf_probe_read_user, which fails on a
	// page not yet faulted in: every byte is written, zeros included.
	if len(b.markerBuf) != fetchargs.HeaderSize+size {
		b.markerBuf = make([]byte, fetchargs.HeaderSize+size)
	}
	buf := b.markerBuf
	clear(buf)
	binary.LittleEndian.PutUint64(buf[0:], ts)
	binary.LittleEndian.PutUint32(buf[8:], uint32(cpu))
	copy(buf[16:32], comm)
	rec := buf[fetchargs.HeaderSize:]
	binary.LittleEndian.PutUint16(rec[0:], uint16(id))
	binary.LittleEndian.PutUint32(rec[4:], uint32(pid))
	binary.LittleEndian.PutUint64(rec[8:], ip)
	copy(rec[16:len(rec)-1], text[:min(len(text), markerMax)])
	ctx := make([]byte, 8*bpfcode.MarkerArgs)
	binary.LittleEndian.PutUint64(ctx[0:], uint64(uintptr(unsafe.Pointer(&buf[0]))))
	binary.LittleEndian.PutUint64(ctx[8:], uint64(pid)<<32|uint64(pid))
	_, err := prog.Run(&ebpf.RunOptions{Context: ctx})
	runtime.KeepAlive(buf)
	if err != nil {
		return fmt.Errorf("running the trace_marker's triggers: %w", err)
	}
	return nil
}

// markerIP is the address a trace_marker record holds (tracing_mark_write,
// whose _THIS_IP_ the kernel stores): a hist key on ip.sym names it. 0
// when the model does not know it. Called with mu held.
func (b *Backend) markerIP() uint64 {
	if b.model == nil {
		return 0
	}
	a, _ := b.model.LookupName("tracing_mark_write")
	return a
}
