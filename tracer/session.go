package tracer

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/features"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/rlimit"

	"github.com/ktrace-dev/ktrace/bpfcode"
	"github.com/ktrace-dev/ktrace/events"
	"github.com/ktrace-dev/ktrace/kernel"
)

// Config is what a tracing session attaches.
type Config struct {
	// Model is the running kernel's model: probe addresses, the
	// architecture and symbols for printing come from it.
	Model  *kernel.Model
	Events []*events.Event
	// RingSize is the ring buffer size in bytes (0: the default that
	// holds a burst of BurstEvents events).
	RingSize int
	// Ring, when set, is the ring buffer prepared for the session: Open
	// takes it when the plan's ring size is its size, else releases it.
	Ring *PreparedRing
	// KprobeMulti selects kprobe-multi links for fprobe events. When
	// false, fprobes attach as one kprobe or kretprobe per function (the
	// kernels without CONFIG_FPROBE, such as the pinned 6.1).
	KprobeMulti bool
	// PlainKprobes attaches kprobe and kretprobe events as kprobes even
	// where a kprobe-multi link would serve a function entry for less per
	// hit: each is then a kprobe of the kernel's, in debugfs's
	// kprobes/list with its state ([FTRACE], [OPTIMIZED]) as the
	// kernel's own event's would be, which tracefs clients look at.
	PlainKprobes bool
	// IgnoreTgid is a process (normally the tracer's own) whose hits are
	// counted but never reach the ring buffer; 0 records every process.
	IgnoreTgid int
	// Follow records the hits of the processes this process starts from
	// now on, and of their descendants, only (the tree is kept in the
	// kernel, see follow.go).
	Follow bool
	// OnlyPid, when not 0, records the hits of this process (thread group
	// id) or thread only; the test runs in the probe's program, before
	// anything is written to the ring buffer.
	OnlyPid int
	// Capacity, when not 0, opens a session that probes can be attached
	// to and detached from over its life (Attach, Group.Detach), up to
	// this many probes in all, sharing one set of maps, one ring buffer
	// and one reader. Events may then be empty.
	Capacity int
	// EventOptions adds histograms to events of Events, or puts them in
	// soft mode (see AttachEvent).
	EventOptions map[*events.Event]EventOptions
	// Reaper, when set, is the executable (the running ktrace, whose main
	// calls RunReaperIfAsked) started as a reaper before the first probe
	// that only tracefs can create is attached, so that such probes go
	// when this process dies, however it dies (see StartReaper).
	Reaper string
}

// Session is a set of attached probes and the ring buffer they fill. The
// links are file descriptors of this process: when it exits or is killed
// the kernel removes the probes. Close detaches everything.
type Session struct {
	cfg     Config
	maps    *Maps
	reader  *ringReader
	decoder *Decoder
	// cur is the record Run hands its handler: one value, reused.
	cur Record

	mu     sync.Mutex // guards what follows
	plan   *Plan      // every probe attached so far (Probes grows)
	groups []*Group
	next   uint32 // the index of the next probe attached
	reaper *Reaper
	// irq fills maps.IrqState; irqTried says it was tried
	// (attachIrqState).
	irq      *IrqState
	irqTried bool
}

// staticEventProbes reports whether plan has event probes on static
// events, whose records take their irqs-off bit from Maps.IrqState.
func staticEventProbes(plan *Plan) bool {
	for _, p := range plan.Probes {
		if att := p.Event.Attached; p.Event.Kind == events.Eprobe && att != nil && att.Event == nil {
			return true
		}
	}
	return false
}

// attachIrqState makes maps.IrqState and attaches its kprobe
// (bpfcode.IrqStateProgram) the first time an event probe on a static
// event is attached. Where that cannot be done, the records' irqs-off bit
// is the one the program infers (bpfcode.Maps.IrqState).
func (s *Session) attachIrqState() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.irqTried || s.cfg.Model == nil {
		return
	}
	s.irqTried = true
	irq, err := AttachIrqState(s.cfg.Model.Arch())
	if err != nil {
		return
	}
	s.irq, s.maps.IrqState = irq, irq.Map
}

// Group is the probes one Open or Attach attached, with their programs and
// links: they are detached together.
type Group struct {
	s      *Session
	probes []*Probe
	progs  []*ebpf.Program
	links  []link.Link
	// maps are the group's own maps: the scratch values of its inline
	// event probes.
	maps []*ebpf.Map
}

// InlineProbes are the group's event probes on synthetic events, which
// nothing attaches: the programs generating the synthetic event's records
// must call each Probe.Inline.
func (g *Group) InlineProbes() []*Probe {
	var out []*Probe
	for _, p := range g.probes {
		if p.Inline != nil {
			out = append(out, p)
		}
	}
	return out
}

// TraceFSPrefix is the group prefix of the tracefs kprobe events that
// cilium/ebpf creates for kretprobes with an explicit maxactive (the
// perf_kprobe PMU cannot set it); the group is
// "<TraceFSPrefix>_<pid>_<random>". Unlike perf-event probes these
// outlive a killed process; CleanStale removes them.
const TraceFSPrefix = "ktrace"

// Open compiles, loads and attaches every probe of cfg.Events. On error
// nothing stays attached.
func Open(cfg Config) (s *Session, err error) {
	if cfg.Model == nil || cfg.Model.Arch() == nil {
		return nil, fmt.Errorf("tracer: no kernel model")
	}
	if err := rlimit.RemoveMemlock(); err != nil {
		return nil, fmt.Errorf("tracer: raising RLIMIT_MEMLOCK: %w", err)
	}
	plan, err := NewPlan(cfg.Events, cfg.planOptions(0))
	if err != nil {
		return nil, err
	}
	if len(plan.Probes) == 0 && cfg.Capacity == 0 {
		return nil, fmt.Errorf("tracer: no probes to attach")
	}
	for _, pr := range plan.Probes {
		pr.setOptions(cfg.EventOptions[pr.Event])
		if need := pr.scratchNeed(); need > 0 {
			if need > maxScratch {
				return nil, fmt.Errorf("tracer: %s/%s: its record is too large for a histogram", pr.Event.Group, pr.Event.Name)
			}
			plan.ScratchSize = max(plan.ScratchSize, need)
		}
	}
	if cfg.Capacity > 0 && len(plan.Probes) > cfg.Capacity {
		return nil, fmt.Errorf("tracer: %d probes exceed the session's capacity of %d", len(plan.Probes), cfg.Capacity)
	}
	// The deferred cleanup holds its own reference: "return nil, err"
	// clears the named result before deferred calls run.
	sess := &Session{cfg: cfg, plan: &Plan{PlanOptions: plan.PlanOptions}}
	s = sess
	defer func() {
		if err != nil {
			sess.Close()
			s = nil
		}
	}()
	var ring *ebpf.Map
	var reader *ringReader
	if cfg.Ring != nil {
		ring, reader, _ = cfg.Ring.take(plan.RingSize)
	}
	if s.maps, err = newMaps(plan, ring); err != nil {
		if reader != nil {
			reader.Close()
		}
		return nil, err
	}
	if cfg.Follow {
		if s.maps.Follow, err = newFollowMap(os.Getpid()); err != nil {
			return nil, err
		}
		if err = s.attachFollow(cfg.Model); err != nil {
			return nil, err
		}
	}
	if s.reader = reader; reader == nil {
		if s.reader, err = newRingReader(s.maps.Ring); err != nil {
			return nil, fmt.Errorf("tracer: %w", err)
		}
	}
	s.decoder = NewDecoder(cfg.Model, &Plan{})
	if len(plan.Probes) > 0 {
		if _, err = s.attachPlan(plan); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// planOptions are the options of a plan of cfg's session whose first
// probe has index first.
func (cfg Config) planOptions(first uint32) PlanOptions {
	return PlanOptions{
		RingSize:     cfg.RingSize,
		IgnoreTgid:   uint32(cfg.IgnoreTgid),
		OnlyPid:      uint32(cfg.OnlyPid),
		Follow:       cfg.Follow,
		Multi:        cfg.KprobeMulti,
		PlainKprobes: cfg.PlainKprobes,
		FirstIndex:   first,
		Shared:       cfg.Capacity > 0,
		Capacity:     cfg.Capacity,
	}
}

// Attach compiles, loads and attaches the probes of evs to a session
// opened with a Capacity, all or nothing, and returns them as a group.
func (s *Session) Attach(evs []*events.Event) (*Group, error) {
	return s.attach(evs, nil)
}

// attach is Attach, with options for the programs of events in opts.
func (s *Session) attach(evs []*events.Event, opts map[*events.Event]EventOptions) (*Group, error) {
	if s.cfg.Capacity == 0 {
		return nil, fmt.Errorf("tracer: the session was opened for a fixed set of probes")
	}
	s.mu.Lock()
	first := s.next
	s.mu.Unlock()
	plan, err := NewPlan(evs, s.cfg.planOptions(first))
	if err != nil {
		return nil, err
	}
	if int(first)+len(plan.Probes) > s.cfg.Capacity {
		return nil, fmt.Errorf("tracer: attaching %d more probes would exceed the session's capacity of %d: %w", len(plan.Probes), s.cfg.Capacity, syscall.ENOSPC)
	}
	for _, pr := range plan.Probes {
		pr.setOptions(opts[pr.Event])
	}
	return s.attachPlan(plan)
}

// EventOptions are what AttachEvent adds to an event's programs.
type EventOptions struct {
	// Hists are the histograms the event's hits count into (its active
	// hist triggers).
	Hists []*Hist
	// NoTrace: the event is in soft mode; its hits count into Hists and
	// are not traced.
	NoTrace bool
	// TraceSwitch, when set, decides at run time whether hits are traced
	// (bpfcode.ProbeProgram.TraceSwitch): an array map of one u32.
	TraceSwitch *ebpf.Map
	// Triggers are the event's trigger commands other than hist
	// (bpfcode.ProbeProgram.Triggers); TracingOn is tracing_on
	// (bpfcode.ProbeProgram.TracingOn), nil: always on.
	Triggers  []*bpfcode.EventTrigger
	TracingOn *ebpf.Map
}

// AttachEvent is Attach for one event whose programs also count into
// histograms, or only count (EventOptions.NoTrace).
func (s *Session) AttachEvent(ev *events.Event, o EventOptions) (*Group, error) {
	return s.attach([]*events.Event{ev}, map[*events.Event]EventOptions{ev: o})
}

// setOptions gives the probe its event's histograms and soft mode.
func (pr *Probe) setOptions(o EventOptions) {
	pr.Hists = nil
	for _, h := range o.Hists {
		pr.Hists = append(pr.Hists, h.Spec)
	}
	pr.NoTrace = o.NoTrace
	pr.TraceSwitch = nil
	if o.TraceSwitch != nil {
		pr.TraceSwitch = o.TraceSwitch
	}
	pr.Triggers = o.Triggers
	pr.TracingOn = nil
	if o.TracingOn != nil {
		pr.TracingOn = o.TracingOn
	}
}

// scratchNeed is what the probe's histograms and triggers' filters need
// of the scratch value (0: nothing beyond the plan's).
func (pr *Probe) scratchNeed() int {
	need := 0
	if len(pr.Hists) > 0 {
		need = bpfcode.HistScratch(pr.Layout.RecordSize())
	}
	for _, t := range pr.Triggers {
		if t.Filter != nil {
			need = max(need, bpfcode.FilterScratch(pr.Layout.RecordSize()))
		}
	}
	if need > 0 && pr.Source != nil {
		need += bpfcode.SourceAreaSize(pr.Source.Layout)
	}
	return need
}

// attachPlan compiles and attaches plan's probes as a new group. Its
// indices must follow the session's.
func (s *Session) attachPlan(plan *Plan) (g *Group, err error) {
	cfg := s.cfg
	if staticEventProbes(plan) {
		s.attachIrqState()
	}
	if err := plan.Compile(cfg.Model, s.maps.Compiler()); err != nil {
		return nil, err
	}
	grp := &Group{s: s, probes: plan.Probes}
	g = grp
	defer func() {
		// grp, not g: a failing return has already set g to nil.
		if err != nil {
			grp.close()
			g = nil
		}
	}()
	if cfg.Reaper != "" && needsTracefs(cfg.Model, plan) {
		s.mu.Lock()
		if s.reaper == nil {
			s.reaper, err = StartReaper(cfg.Reaper, "")
		}
		s.mu.Unlock()
		if err != nil {
			return nil, err
		}
	}
	for _, p := range plan.Probes {
		if err = s.maps.Probes.Put(p.Index, p.Info); err != nil {
			return nil, fmt.Errorf("tracer: probe table: %w", err)
		}
		// A shared session's counters of a probe index start at zero.
		if cfg.Capacity > 0 {
			if err = s.maps.resetCounts(p.Index); err != nil {
				return nil, err
			}
		}
	}
	for _, batch := range shareBatches(plan) {
		if len(batch) > 1 && g.attachShared(batch) == nil {
			continue
		}
		// One probe, or a shared link the kernel refused: each probe
		// alone, so that an error names the line that cannot attach.
		for _, p := range batch {
			if err = g.attach(cfg, p); err != nil {
				return nil, err
			}
		}
	}
	s.mu.Lock()
	s.next = plan.FirstIndex + uint32(len(plan.Probes))
	s.plan.Probes = append(s.plan.Probes, plan.Probes...)
	s.plan.MaxRecord = max(s.plan.MaxRecord, plan.MaxRecord)
	s.groups = append(s.groups, g)
	s.mu.Unlock()
	s.decoder.add(plan.Probes)
	return g, nil
}

// ErrNotSupported is wrapped for events the eBPF backend cannot trace.
var ErrNotSupported = errors.New("not supported by ktrace's eBPF backend")

func (g *Group) load(spec *ebpf.ProgramSpec, multi bool) (*ebpf.Program, error) {
	spec = spec.Copy()
	if multi {
		spec.AttachType = ebpf.AttachTraceKprobeMulti
	}
	prog, err := ebpf.NewProgramWithOptions(spec, ebpf.ProgramOptions{LogSizeStart: 1 << 20})
	if err != nil {
		return nil, err
	}
	g.progs = append(g.progs, prog)
	return prog, nil
}

// target is the symbol and offset link.Kprobe gets for a probe: the
// written symbol without its module prefix (the kernel's lookup searches
// modules too), or, for address probes, the function holding the address.
func target(m *kernel.Model, p *events.Probe) (string, uint64, error) {
	if p.Symbol != "" {
		sym := p.Symbol
		if i := strings.IndexByte(sym, ':'); i >= 0 {
			sym = sym[i+1:]
		}
		return sym, p.Offset, nil
	}
	fn, ok := m.FuncAt(p.Addr)
	if !ok {
		return "", 0, fmt.Errorf("address %#x is in no known function", p.Addr)
	}
	return fn.Name, p.Addr - fn.Addr, nil
}

func (g *Group) attach(cfg Config, p *Probe) error {
	// An event probe on a dynamic event attaches where its source would.
	ev, pr, kind := p.Event, p.attachProbe(), p.kind()
	where := fmt.Sprintf("%s/%s at %s", ev.Group, ev.Name, place(pr))
	if u := pr.Uprobe; u != nil {
		return g.attachUprobe(p, u, where)
	}
	if p.Inline != nil {
		// Called by the generating programs, with a scratch value of
		// its own.
		cpus, err := ebpf.PossibleCPU()
		if err != nil {
			return fmt.Errorf("tracer: %s: possible CPUs: %w", where, err)
		}
		sc, err := ebpf.NewMap(&ebpf.MapSpec{Name: "ktrace_epscr", Type: ebpf.Array, KeySize: 4,
			ValueSize: g.s.maps.Scratch.ValueSize(), MaxEntries: uint32(cpus)})
		if err != nil {
			return fmt.Errorf("tracer: %s: creating map ktrace_epscr: %w", where, err)
		}
		g.maps = append(g.maps, sc)
		p.Inline.Maps.Scratch = sc
		return nil
	}
	if att := ev.Attached; kind == events.Eprobe && att != nil {
		// The attached tracepoint's own BPF hook: the program sees its
		// record.
		prog, err := g.load(p.Main, false)
		if err != nil {
			return fmt.Errorf("tracer: loading %s: %w", where, err)
		}
		l, err := link.Tracepoint(att.System, att.Name, prog, nil)
		if err != nil {
			return fmt.Errorf("tracer: attaching %s: %w", where, err)
		}
		g.links = append(g.links, l)
		return nil
	}
	sym, off, err := target(cfg.Model, pr)
	if err != nil {
		return fmt.Errorf("tracer: %s: %w", where, err)
	}
	if kind == events.Tprobe {
		// The tracepoint itself, as a raw tracepoint: its arguments are
		// the program's context.
		prog, err := g.load(p.Main, false)
		if err != nil {
			return fmt.Errorf("tracer: loading %s: %w", where, err)
		}
		l, err := link.AttachRawTracepoint(link.RawTracepointOptions{Name: pr.Symbol, Program: prog})
		if err != nil {
			return fmt.Errorf("tracer: attaching %s: %w", where, err)
		}
		g.links = append(g.links, l)
		return nil
	}
	fprobe := kind == events.Fentry || kind == events.Fexit
	// A kprobe or kretprobe that could share a kprobe-multi link
	// (entryKprobe) takes one of its own when alone: the link's handler
	// runs the program without the kprobe and perf layers.
	//
	// An fprobe exit takes a kretprobe, whose pool of return hooks
	// (maxactive, at least 10) outlasts a kretprobe-multi link's (2 per
	// CPU): tasks sleeping in the function hold a hook each, and a
	// server of ktrace's own mount sleeps in vfs_read with several
	// threads, which took every hook of a link on vfs_read or ksys_read
	// and lost every other return. A link is the fallback.
	multi := (fprobe || p.Shared != nil) && cfg.KprobeMulti && kind != events.Fexit
	opts := &link.KprobeOptions{Offset: off, TraceFSPrefix: fmt.Sprintf("%s_%d", TraceFSPrefix, os.Getpid())}
	if tracefsOnly(cfg.Model, p) {
		// Only a maxactive other than the kernel's default needs a
		// tracefs kprobe event: the perf kprobe PMU, which ties the probe
		// to this process's file descriptors, registers with the default.
		opts.RetprobeMaxActive = pr.MaxActive
	}
	// The entry half of a return probe that saves arguments goes first,
	// so no return ever misses its entry data.
	if p.Entry != nil {
		prog, err := g.load(p.Entry, multi)
		if err != nil {
			return fmt.Errorf("tracer: loading the entry program of %s: %w", where, err)
		}
		var l link.Link
		if multi {
			l, err = link.KprobeMulti(prog, link.KprobeMultiOptions{Symbols: []string{sym}})
		} else {
			l, err = link.Kprobe(sym, prog, &link.KprobeOptions{Offset: off})
		}
		if err != nil {
			return fmt.Errorf("tracer: attaching the entry of %s: %w", where, err)
		}
		g.links = append(g.links, l)
	}
	// attachMain loads the main program for a link (multi) or a
	// kprobe and attaches it.
	attachMain := func(multi bool) (link.Link, error) {
		prog, err := g.load(p.Main, multi)
		if err != nil {
			return nil, fmt.Errorf("tracer: loading %s: %w", where, err)
		}
		var l link.Link
		switch {
		case multi && kind.IsReturn():
			l, err = link.KretprobeMulti(prog, link.KprobeMultiOptions{Symbols: []string{sym}})
		case multi:
			l, err = link.KprobeMulti(prog, link.KprobeMultiOptions{Symbols: []string{sym}})
		case kind.IsReturn():
			l, err = link.Kretprobe(sym, prog, opts)
		default:
			l, err = link.Kprobe(sym, prog, opts)
		}
		if err != nil {
			// The refused program goes; another may replace it.
			g.progs = g.progs[:len(g.progs)-1]
			prog.Close()
			return nil, fmt.Errorf("tracer: attaching %s: %w", where, err)
		}
		return l, nil
	}
	l, err := attachMain(multi)
	if err != nil && cfg.KprobeMulti && (kind == events.Fexit || (multi && !fprobe)) {
		// The other of the two: an fprobe exit's own link where kprobes
		// refuse the function; the kprobe itself where a kprobe-multi
		// link refuses what the kernel's kprobe takes (a function ftrace
		// does not trace).
		l, err = attachMain(!multi)
	}
	if err != nil {
		return err
	}
	g.links = append(g.links, l)
	return nil
}

// attachUprobe attaches a uprobe's program (a uretprobe's, and its entry
// program) at the probe's file offset in its file, with the kernel's
// reference counter (an SDT semaphore) when the line gave one: through a
// uprobe-multi link where the kernel has them (6.6 on; the handler runs
// the program without the perf layer), else through the perf uprobe PMU.
func (g *Group) attachUprobe(p *Probe, u *events.UprobePlace, where string) error {
	if u.Offset == 0 {
		// The library takes a zero address for "look the symbol up".
		return fmt.Errorf("tracer: %s: a uprobe at file offset 0: %w", where, ErrNotSupported)
	}
	ex, err := link.OpenExecutable(u.Path)
	if err != nil {
		return fmt.Errorf("tracer: %s: %w", where, err)
	}
	multi := features.HaveBPFLinkUprobeMulti() == nil
	attach := func(spec *ebpf.ProgramSpec, ret bool) (link.Link, error) {
		if multi {
			spec = spec.Copy()
			spec.AttachType = ebpf.AttachTraceUprobeMulti
		}
		prog, err := g.load(spec, false)
		if err != nil {
			return nil, fmt.Errorf("loading: %w", err)
		}
		if multi {
			opts := &link.UprobeMultiOptions{Addresses: []uint64{u.Offset}}
			if u.RefCtr != 0 {
				opts.RefCtrOffsets = []uint64{u.RefCtr}
			}
			if ret {
				return ex.UretprobeMulti(nil, prog, opts)
			}
			return ex.UprobeMulti(nil, prog, opts)
		}
		opts := &link.UprobeOptions{Address: u.Offset, RefCtrOffset: u.RefCtr}
		if ret {
			return ex.Uretprobe("", prog, opts)
		}
		return ex.Uprobe("", prog, opts)
	}
	// A uretprobe's entry half goes first, so no return misses it.
	if p.Entry != nil {
		l, err := attach(p.Entry, false)
		if err != nil {
			return fmt.Errorf("tracer: the entry of %s: %w", where, err)
		}
		g.links = append(g.links, l)
	}
	l, err := attach(p.Main, p.Event.Kind == events.Uretprobe)
	if err != nil {
		return fmt.Errorf("tracer: %s: %w", where, err)
	}
	g.links = append(g.links, l)
	return nil
}

// shareBatches splits the plan's probes into attach batches, in plan
// order: the probes of one shared program (the same ShareKey) whose
// functions are all different go together, each through one multi link;
// every other probe is a batch of its own.
func shareBatches(plan *Plan) [][]*Probe {
	var out [][]*Probe
	open := map[string][]int{} // share key -> indices into out of batches still taking probes
	for _, p := range plan.Probes {
		if p.Shared == nil {
			out = append(out, []*Probe{p})
			continue
		}
		placed := false
		for _, bi := range open[p.ShareKey] {
			dup := false
			for _, q := range out[bi] {
				if q.Probe.Symbol == p.Probe.Symbol {
					dup = true
					break
				}
			}
			if !dup {
				out[bi] = append(out[bi], p)
				placed = true
				break
			}
		}
		if !placed {
			open[p.ShareKey] = append(open[p.ShareKey], len(out))
			out = append(out, []*Probe{p})
		}
	}
	return out
}

// attachShared loads the shared program of a batch once and attaches it
// to every function of the batch through one kprobe-multi (fentry) or
// kretprobe-multi (fexit) link, each function's cookie being its probe's
// index. One link is one ftrace update for the whole batch, where a link
// per function costs one each, to attach and again to detach.
func (g *Group) attachShared(batch []*Probe) error {
	prog, err := g.load(batch[0].Shared, true)
	if err != nil {
		return err
	}
	opts := link.KprobeMultiOptions{}
	for _, p := range batch {
		sym := p.Probe.Symbol
		if i := strings.IndexByte(sym, ':'); i >= 0 {
			sym = sym[i+1:]
		}
		opts.Symbols = append(opts.Symbols, sym)
		opts.Cookies = append(opts.Cookies, uint64(p.Index))
	}
	var l link.Link
	if batch[0].Event.Kind.IsReturn() {
		l, err = link.KretprobeMulti(prog, opts)
	} else {
		l, err = link.KprobeMulti(prog, opts)
	}
	if err != nil {
		return err
	}
	g.links = append(g.links, l)
	return nil
}

// tracefsOnly reports whether probe p can only be created through tracefs:
// a kretprobe whose maxactive differs from the kernel's default, which the
// perf kprobe PMU cannot set.
func tracefsOnly(m *kernel.Model, p *Probe) bool {
	return p.Event.Kind == events.Kretprobe && p.Probe.MaxActive != events.DefaultMaxActive(m)
}

func needsTracefs(m *kernel.Model, plan *Plan) bool {
	for _, p := range plan.Probes {
		if tracefsOnly(m, p) {
			return true
		}
	}
	return false
}

// Programs returns how many programs the session has loaded.
func (s *Session) Programs() int { return s.countGroups(func(g *Group) int { return len(g.progs) }) }

// Links returns how many links attach the session's programs: fewer than
// probes where probes share a program and a multi link.
func (s *Session) Links() int { return s.countGroups(func(g *Group) int { return len(g.links) }) }

// countGroups sums n over the session's groups.
func (s *Session) countGroups(n func(*Group) int) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	total := 0
	for _, g := range s.groups {
		total += n(g)
	}
	return total
}

// Plan returns the session's probes.
func (s *Session) Plan() *Plan { return s.plan }

// Decoder returns the session's record decoder.
func (s *Session) Decoder() *Decoder { return s.decoder }

// ErrTimeout is what a wait for records that timed out returns.
var ErrTimeout = os.ErrDeadlineExceeded

// ErrFlushed is what a wait for records returns after Flush.
var ErrFlushed = errors.New("ring buffer flushed")

// Flush makes Run hand its handler the records already in the ring
// buffer without waiting for a wake-up (records below the wake-up level
// send none), then call RunHandler.Flushed. A reader that must show
// everything recorded so far calls it.
func (s *Session) Flush() error { return s.reader.Flush() }

// Buffered returns the bytes waiting in the ring buffer.
func (s *Session) Buffered() int { return s.reader.available() }

// Stat is the hit count of one probe point.
type Stat struct {
	Probe        *Probe
	Hits, Misses uint64
}

// Stats returns the hits (times the program ran) and misses (records the
// full ring buffer refused) of every probe attached so far.
func (s *Session) Stats() ([]Stat, error) {
	s.mu.Lock()
	probes := s.plan.Probes
	s.mu.Unlock()
	return s.maps.stats(probes)
}

// Stats returns the hits and misses of the group's probes.
func (g *Group) Stats() ([]Stat, error) { return g.s.maps.stats(g.probes) }

// stats reads the counters of probes.
func (m *Maps) stats(probes []*Probe) ([]Stat, error) {
	out := make([]Stat, 0, len(probes))
	for _, p := range probes {
		h, mi, err := m.Counts(p.Index)
		if err != nil {
			return nil, err
		}
		out = append(out, Stat{Probe: p, Hits: h, Misses: mi})
	}
	return out, nil
}

// CPUMisses returns, per possible CPU, the records the full ring buffer
// refused, summed over the session's probes: what the kernel's trace
// output reports as "CPU:N [LOST M EVENTS]".
func (s *Session) CPUMisses() ([]uint64, error) {
	s.mu.Lock()
	probes := s.plan.Probes
	s.mu.Unlock()
	var out []uint64
	for _, p := range probes {
		per, err := s.maps.CPUCounts(p.Index)
		if err != nil {
			return nil, err
		}
		if out == nil {
			out = make([]uint64, len(per))
		}
		for cpu, v := range per {
			out[cpu] += v[1]
		}
	}
	return out, nil
}

// Detach closes every link: the probes stop firing, the records already
// in the ring buffer can still be read.
func (s *Session) Detach() error {
	s.mu.Lock()
	var links []link.Link
	for _, g := range s.groups {
		links = append(links, g.links...)
		g.links = nil
	}
	s.mu.Unlock()
	return closeLinks(links)
}

// closeLinks closes links concurrently: unregistering a kprobe waits for
// RCU grace periods, and closing a hundred kprobe links one after the
// other waits for a hundred of them in a row (8.6 s in the 6.1 guest,
// against 3.7 s for the kernel's own clear of the same events); closed
// together, their waits overlap.
func closeLinks(links []link.Link) error {
	errs := make([]error, len(links))
	var wg sync.WaitGroup
	work := make(chan int)
	for w := 0; w < min(len(links), detachWorkers); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				errs[i] = links[i].Close()
			}
		}()
	}
	for i := range links {
		work <- i
	}
	close(work)
	wg.Wait()
	return errors.Join(errs...)
}

// Detach detaches the group's probes and releases their programs; the
// records they wrote stay readable. The session's other groups go on.
func (g *Group) Detach() error {
	s := g.s
	s.mu.Lock()
	for i, x := range s.groups {
		if x == g {
			s.groups = append(s.groups[:i:i], s.groups[i+1:]...)
			break
		}
	}
	s.mu.Unlock()
	return g.close()
}

// close closes the group's links and programs.
func (g *Group) close() error {
	errs := []error{closeLinks(g.links)}
	g.links = nil
	for _, p := range g.progs {
		errs = append(errs, p.Close())
	}
	g.progs = nil
	for _, m := range g.maps {
		errs = append(errs, m.Close())
	}
	g.maps = nil
	return errors.Join(errs...)
}

// detachWorkers bounds how many links Detach closes at once.
const detachWorkers = 64

// Close detaches everything and releases the programs and maps.
func (s *Session) Close() error {
	errs := []error{s.Detach()}
	if s.reader != nil {
		errs = append(errs, s.reader.Close())
	}
	s.mu.Lock()
	groups := s.groups
	s.groups = nil
	s.mu.Unlock()
	for _, g := range groups {
		errs = append(errs, g.close())
	}
	if s.irq != nil {
		// The map goes with it: the maps' own Close must not.
		errs = append(errs, s.irq.Close())
		s.irq = nil
		if s.maps != nil {
			s.maps.IrqState = nil
		}
	}
	if s.maps != nil {
		errs = append(errs, s.maps.Close())
		s.maps = nil
	}
	// The links removed their tracefs events; the reaper has nothing
	// left to do.
	errs = append(errs, s.reaper.Stop())
	s.reaper = nil
	return errors.Join(errs...)
}
