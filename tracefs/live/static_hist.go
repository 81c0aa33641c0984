package live

import (
	"fmt"
	"os"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"

	"github.com/ktrace-dev/ktrace/bpfcode"
	"github.com/ktrace-dev/ktrace/printfmt"
	"github.com/ktrace-dev/ktrace/tracefs"
)

// Hist triggers on the kernel's static events: a tracepoint program of its
// own per event counts the event's active histograms (bpfcode's
// CompileTracepointHist), beside the program that traces the event when it
// is enabled.

type staticHist struct {
	scratch *ebpf.Map
	prog    *ebpf.Program
	link    link.Link
}

func (sh *staticHist) close() {
	if sh.link != nil {
		sh.link.Close()
	}
	if sh.prog != nil {
		sh.prog.Close()
	}
	if sh.scratch != nil {
		sh.scratch.Close()
	}
}

// attachStaticHists replaces the counting program of static event se with
// one for its active histograms (none: no program). Called with mu held.
func (b *Backend) attachStaticHists(se *tracefs.StaticEvent, key evID) error {
	if old := b.hists.static[key]; old != nil {
		old.close()
		delete(b.hists.static, key)
	}
	hists := b.activeHists(key)
	if len(hists) == 0 {
		return nil
	}
	if err := b.fillTargets(hists); err != nil {
		return b.refuse(se.System, se.Name, err)
	}
	ev, err := printfmt.Parse(se.System, se.Format)
	if err != nil {
		return b.refuse(se.System, se.Name, err)
	}
	size := recordSize(ev)
	cpus, err := ebpf.PossibleCPU()
	if err != nil {
		return b.refuse(se.System, se.Name, err)
	}
	sh := &staticHist{}
	fail := func(err error) error {
		sh.close()
		return b.refuse(se.System, se.Name, err)
	}
	scratch := bpfcode.HistScratch(size)
	if sh.scratch, err = ebpf.NewMap(&ebpf.MapSpec{Name: "ktrace_tph", Type: ebpf.Array, KeySize: 4, ValueSize: uint32(scratch), MaxEntries: uint32(cpus)}); err != nil {
		return fail(fmt.Errorf("creating map ktrace_tph: %w", err))
	}
	p := &bpfcode.TracepointHist{Size: size, Type: uint16(se.ID), IgnoreTgid: uint32(os.Getpid()), Scratch: sh.scratch, ScratchSize: scratch}
	for _, h := range hists {
		p.Hists = append(p.Hists, h.Spec)
	}
	ins, err := bpfcode.CompileTracepointHist(p)
	if err != nil {
		return fail(err)
	}
	if sh.prog, err = ebpf.NewProgramWithOptions(&ebpf.ProgramSpec{Name: "ktrace_tph", Type: ebpf.TracePoint, License: "GPL", Instructions: ins}, ebpf.ProgramOptions{LogSizeStart: 1 << 20}); err != nil {
		return fail(fmt.Errorf("loading the histogram program: %w", err))
	}
	if sh.link, err = link.Tracepoint(se.System, se.Name, sh.prog, nil); err != nil {
		return fail(fmt.Errorf("attaching the histogram program: %w", err))
	}
	b.hists.static[key] = sh
	return nil
}
