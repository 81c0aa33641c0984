package live

import (
	"fmt"
	"os"
	"syscall"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"

	"github.com/ktrace-dev/ktrace/bpfcode"
	"github.com/ktrace-dev/ktrace/events"
	"github.com/ktrace-dev/ktrace/filter"
	"github.com/ktrace-dev/ktrace/printfmt"
	"github.com/ktrace-dev/ktrace/tracefs"
)

// A static event in soft mode (one with triggers, or the target of an
// enable_event or disable_event trigger) has a tracepoint program of its
// own (bpfcode's CompileTracepointHist): it counts the event's active
// histograms, runs its triggers and, while the event's switch is on,
// writes its record to the static events' ring buffer, in the order the
// kernel does these. The plain program that traces enabled static events
// is then not attached.

type staticHist struct {
	scratch *ebpf.Map
	prog    *ebpf.Program
	link    link.Link
	// out is the event as the static ring's reader prints it.
	out *staticEvent
	// size is the record the program reads, for the trace_marker's
	// event (MarkerHit).
	size int
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

// staticSoft reports whether static event key needs a program of its own:
// it is in soft mode, or enabled with a filter.
func (b *Backend) staticSoft(key evID) bool {
	if b.staticFilters[key] != nil && b.staticOn[key.group+"/"+key.name] {
		return true
	}
	return len(b.activeHists(key)) > 0 || len(b.trig.of[key]) > 0 || b.targeted(key)
}

var _ tracefs.StaticFilterSetter = (*Backend)(nil)

// SetStaticFilter gives a static event its filter: an enabled one is
// traced by a program of its own that runs it (EINVAL, with the reason on
// stderr, for a filter the program cannot run). common_flags and
// common_preempt_count read what the record holds (read from the CPU,
// or bpfcode.TracepointHist's Flags and Preempt), as the triggers'
// filters and the hist keys do.
func (b *Backend) SetStaticFilter(group, name string, f *filter.Filter) error {
	if f != nil {
		if err := bpfcode.CheckFilter(f); err != nil {
			if b.warn != nil {
				fmt.Fprintf(b.warn, "ktrace: filter %s/%s: %v\n", group, name, err)
			}
			return fmt.Errorf("filter %s/%s: %w", group, name, syscall.EINVAL)
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	key := evID{group, name, staticSerial}
	if b.staticFilters == nil {
		b.staticFilters = map[evID]*filter.Filter{}
	}
	old := b.staticFilters[key]
	if f == nil {
		delete(b.staticFilters, key)
	} else {
		b.staticFilters[key] = f
	}
	if old == nil && f == nil {
		return nil
	}
	return b.recompile(key)
}

// attachStaticHists gives static event se the program its soft mode
// needs, a new one for its current histograms and triggers, or, out of
// soft mode, none (the plain program traces it while it is enabled).
// Called with mu held.
func (b *Backend) attachStaticHists(se *tracefs.StaticEvent, key evID) error {
	old := b.hists.static[key]
	on := b.staticOn[se.System+"/"+se.Name]
	if !b.staticSoft(key) {
		if old != nil {
			// What the program wrote before stays in the trace (the
			// reader may not have reached it yet); later writes drop.
			old.out.offAt.Store(monoNow())
			old.close()
			delete(b.hists.static, key)
		}
		if sw := b.hists.switches[key]; sw != nil {
			sw.Close()
			delete(b.hists.switches, key)
		}
		if old != nil && on {
			return b.staticPlain(*se, true)
		}
		return nil
	}
	hists := b.activeHists(key)
	if err := b.fillTargets(hists); err != nil {
		return b.refuse(se.System, se.Name, err)
	}
	ev, err := printfmt.Parse(se.System, se.Format)
	if err != nil {
		return b.refuse(se.System, se.Name, err)
	}
	st, err := b.staticTracer()
	if err != nil {
		return b.refuse(se.System, se.Name, err)
	}
	tracing, err := b.tracing()
	if err != nil {
		return b.refuse(se.System, se.Name, err)
	}
	trigs, err := b.eventTriggers(key)
	if err != nil {
		return b.refuse(se.System, se.Name, err)
	}
	sw := b.hists.switches[key]
	if sw == nil {
		if sw, err = newTraceSwitch(); err != nil {
			return b.refuse(se.System, se.Name, err)
		}
		b.hists.switches[key] = sw
	}
	if err := setSwitch(sw, on); err != nil {
		return b.refuse(se.System, se.Name, err)
	}
	size := recordSize(ev)
	if se.Internal {
		// The trace_marker's text follows the fixed fields, with its NUL.
		size = (size + markerMax + 1 + 7) &^ 7
	}
	cpus, err := ebpf.PossibleCPU()
	if err != nil {
		return b.refuse(se.System, se.Name, err)
	}
	sh := &staticHist{}
	if old != nil {
		sh.out = old.out
	} else {
		st.mu.Lock()
		st.next++
		sh.out = &staticEvent{num: st.next, ev: ev}
		st.byNum[sh.out.num] = sh.out
		st.mu.Unlock()
	}
	fail := func(err error) error {
		sh.close()
		if old == nil {
			st.mu.Lock()
			delete(st.byNum, sh.out.num)
			st.mu.Unlock()
		}
		return b.refuse(se.System, se.Name, err)
	}
	scratch := bpfcode.HistScratch(size)
	if sh.scratch, err = ebpf.NewMap(&ebpf.MapSpec{Name: "ktrace_tph", Type: ebpf.Array, KeySize: 4, ValueSize: uint32(scratch), MaxEntries: uint32(cpus)}); err != nil {
		return fail(fmt.Errorf("creating map ktrace_tph: %w", err))
	}
	p := &bpfcode.TracepointHist{Size: size, Type: uint16(se.ID), IgnoreTgid: uint32(os.Getpid()), Scratch: sh.scratch, ScratchSize: scratch,
		Triggers: trigs, TracingOn: tracing, Ring: st.ring, Switch: sw, Num: sh.out.num, Filter: b.staticFilters[key]}
	for _, h := range hists {
		p.Hists = append(p.Hists, h.Spec)
	}
	p.Iterator = b.tracepointIterator(se.System, se.Name)
	p.UserRegs = se.System == "syscalls"
	p.CountOwnHits = !events.AboutCurrentTask(se.System)
	p.Flags, p.Preempt = events.TracepointContext(se.System, se.Name)
	if se.Internal {
		// No program can attach to it: MarkerHit runs this one for each
		// trace_marker write.
		p.Ring, p.Switch, p.IgnoreTgid = nil, nil, 0
		ins, err := bpfcode.CompileMarkerHist(p)
		if err != nil {
			return fail(err)
		}
		if sh.prog, err = ebpf.NewProgramWithOptions(&ebpf.ProgramSpec{Name: "ktrace_marker", Type: ebpf.RawTracepoint, License: "GPL", Instructions: ins}, ebpf.ProgramOptions{LogSizeStart: 1 << 20}); err != nil {
			return fail(fmt.Errorf("loading the trace_marker's trigger program: %w", err))
		}
		sh.size = size
		if old != nil {
			old.close()
		}
		b.hists.static[key] = sh
		return nil
	}
	// Its records' context as the plain program's (staticTracer.kind).
	p.Context = st.cpuContext(se.System != "syscalls")
	ins, err := bpfcode.CompileTracepointHist(p)
	if err != nil {
		return fail(err)
	}
	if sh.prog, err = ebpf.NewProgramWithOptions(&ebpf.ProgramSpec{Name: "ktrace_tph", Type: ebpf.TracePoint, License: "GPL", Instructions: ins}, ebpf.ProgramOptions{LogSizeStart: 1 << 20}); err != nil {
		return fail(fmt.Errorf("loading the histogram program: %w", err))
	}
	// The plain program goes first: a hit is traced by one program only.
	if err := b.staticPlain(*se, false); err != nil {
		return fail(err)
	}
	if old != nil {
		old.close()
	}
	if sh.link, err = link.Tracepoint(se.System, se.Name, sh.prog, nil); err != nil {
		delete(b.hists.static, key)
		err = fail(fmt.Errorf("attaching the histogram program: %w", err))
		if on {
			b.staticPlain(*se, true)
		}
		return err
	}
	b.hists.static[key] = sh
	return nil
}

// cmdlineRecorded are the tracepoints the kernel's cmdline recorder
// (record-cmd, record-tgid) adds a probe of its own to while events are
// traced, so that the kernel calls their probes through the iterator.
var cmdlineRecorded = map[string]bool{"sched_switch": true, "sched_wakeup": true, "sched_wakeup_new": true}

// tracepointIterator is the address of static event sys:name's
// tracepoint iterator where the kernel's own tracer would call the
// tracer's function through it (bpfcode.TracepointHist.Iterator), 0
// elsewhere.
func (b *Backend) tracepointIterator(sys, name string) uint64 {
	if sys != "sched" || !cmdlineRecorded[name] || b.model == nil {
		return 0
	}
	if o := b.TraceOptions; o != nil && !o.OptionOn("record-cmd") && !o.OptionOn("record-tgid") {
		return 0
	}
	addr, ok := b.model.LookupName("__traceiter_" + name)
	if !ok {
		return 0
	}
	return addr
}
