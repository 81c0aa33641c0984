package live

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/ktrace-dev/ktrace/bpfcode"
	"github.com/ktrace-dev/ktrace/events"
	"github.com/ktrace-dev/ktrace/filter"
	"github.com/ktrace-dev/ktrace/kernel"
	"github.com/ktrace-dev/ktrace/tracefs"
	"github.com/ktrace-dev/ktrace/tracer"
)

// Note is the stderr line of `ktrace sh` and `ktrace mount` when
// enabling an event attaches it to the running kernel.
const Note = "ktrace: probe backend: eBPF on the running kernel: enabled events record into trace"

// Backend is the tracefs backend of a host where probes can attach:
// the registry decides what the control files accept, and enabling an
// event attaches it to one tracer session shared by every enabled event
// (one ring buffer, one set of maps, one reader goroutine), whose records
// go to the FS's trace ring. Disabling detaches the event's group of
// probes; the session stays for the next enable.
type Backend struct {
	*tracefs.RegistryBackend
	model *kernel.Model
	// Record receives each trace line without its TASK-PID column, which
	// tracefs fills in when the trace is read (tracefs.FS.RecordTask).
	Record func(ts uint64, pid int, comm string, rest []byte) bool
	// TraceOptions are the FS's trace options (hash-ptr changes how a
	// static event's %p prints); nil: the defaults.
	TraceOptions interface{ OptionOn(name string) bool }
	// Export, when set, receives each record of a dynamic event that
	// went into the trace (Record kept it), with the session's decoder,
	// from the reader's goroutine: the OTLP export of a mount.
	Export func(*tracer.Decoder, *tracer.Record)
	// irqStart and irqEnd are __irqentry_text (function_graph's
	// interrupt entries), looked up once (irqOnce).
	irqOnce          sync.Once
	irqStart, irqEnd uint64
	// RecordGraph passes a function_graph record to the trace
	// (tracefs.FS.RecordGraph).
	RecordGraph func(tracefs.GraphRecord) bool
	// TaskForked and TaskFreed receive the forks and freed tasks
	// while FollowTasks is on (tracefs.FS.TaskForked, TaskFreed).
	TaskForked func(parent, child int)
	TaskFreed  func(pid int)
	// IgnorePID drops the records of this process (0: none): the server of
	// a mount plays the kernel, whose own work the kernel does not trace.
	IgnorePID uint32
	// Reaper is the executable the tracer starts as its reaper for probes
	// only tracefs can create (tracer.Config.Reaper); "" starts none.
	Reaper string
	// warn receives one line per failed attach (the kernel's enable write
	// fails with an errno alone; ktrace says why on stderr).
	warn io.Writer

	mu sync.Mutex // serialises enabling and disabling
	// markerMu serialises the runs of the trace_marker event's program,
	// which share its scratch value.
	markerMu sync.Mutex
	// markerBuf is the record MarkerHit gives the program (markerMu).
	markerBuf []byte
	// progress counts the records the readers took (await).
	progress atomic.Uint64
	smu      sync.Mutex // guards what follows
	sess     *tracer.Session
	// pumpStop ends the reader goroutine, which closes pumpDone.
	pumpStop, pumpDone chan struct{}
	live               map[evID]*tracer.Group
	// done holds the hits and misses of detached groups: the kernel's
	// counters live as long as the event, across disable and enable.
	done map[evID]counts
	// peers are the live backends of the tracing instances made beside
	// this one (AddPeer), and gone the counts of those removed since:
	// the kernel counts a kprobe's hits once, whichever instance enabled
	// it, and kprobe_profile at the top level shows them all.
	peers map[*Backend]bool
	// fpOps, when set (TrackFprobes), stands in for the ftrace users
	// of defined fprobe events that have none of their own.
	fpOps *fprobeOps
	// top is the backend whose peer this one is (AddPeer).
	top  *Backend
	gone map[evID]counts
	// synced are the Sync calls waiting for the reader to pass on what
	// the ring buffer held when they flushed it.
	synced []chan struct{}
	// static traces the kernel's static events (static.go); nil until
	// the first is enabled. Guarded by mu.
	static *staticTracer
	// hists are the events' histograms (hist.go). Guarded by mu.
	hists histState
	// synths are the synthetic events hist actions generate, by name
	// (synth.go). Guarded by mu.
	synths map[string]*synthOut
	// trig are the trigger commands other than hist, tracingOn is
	// tracing_on (triggers.go). Guarded by mu.
	trig      trigState
	tracingOn lazyMap
	snapQ     lazyMap
	// staticOn is which static events are enabled ("SYSTEM/EVENT"), as
	// tracefs last said or a trigger switched them. Guarded by mu.
	staticOn map[string]bool
	// staticFilters are the static events' filters (static_hist.go).
	// Guarded by mu.
	staticFilters map[evID]*filter.Filter
	// tasks follows forks for options/event-fork (tasks.go); nil when
	// off. Guarded by mu.
	tasks *taskFollower
	// funcs is the function tracer (functions.go); nil when it does
	// not run. Guarded by mu.
	funcs *funcTracer
	// fprobes are the function commands attached (funcprobes.go), and
	// ftargets the events their enable_event and disable_event switch.
	// Guarded by mu.
	fprobes  []*funcProbeRun
	ftargets map[evID]bool
	// fnLast is each CPU's last function entry (func-no-repeats),
	// guarded by fnMu (the reader's).
	fnMu   sync.Mutex
	fnLast map[uint32]*funcLast
}

// evID names one event for as long as it exists: its serial, which no
// later event reuses (a re-created event starts from 0 hits, as the
// kernel's does, even with the same name and ID).
type evID struct {
	group, name string
	serial      uint64
}

type counts struct{ hits, misses uint64 }

// capacity bounds the probes one backend attaches over its life.
const capacity = 1 << 14

// ringSize is the ring buffer every enabled event writes to: a few
// times the kernel's own per-CPU trace buffer (1.4 MB), shared by all.
const ringSize = 8 << 20

// syncTimeout bounds a Sync's wait for a reader that passes nothing on;
// one still busy with what was traced before the Sync is waited for as
// long as it makes progress, up to syncLimit.
const (
	syncTimeout = time.Second
	syncLimit   = 30 * time.Second
)

// Sync returns once the reader has passed on the records the ring buffer
// held when Sync was called.
func (b *Backend) Sync() {
	b.syncStatic()
	b.smu.Lock()
	if b.sess == nil {
		b.smu.Unlock()
		return
	}
	c := make(chan struct{})
	b.synced = append(b.synced, c)
	err := b.sess.Flush()
	b.smu.Unlock()
	if err != nil {
		b.release(-1)
		return
	}
	b.await(c)
}

// await waits for c to be closed: while the readers pass records on
// (b.progress), until syncTimeout goes by without one, or syncLimit.
func (b *Backend) await(c <-chan struct{}) {
	last := b.progress.Load()
	deadline := time.Now().Add(syncLimit)
	for {
		select {
		case <-c:
			return
		case <-time.After(syncTimeout):
		}
		now := b.progress.Load()
		if now == last || time.Now().After(deadline) {
			return
		}
		last = now
	}
}

// release wakes the first n waiting Sync calls (n < 0: all of them).
func (b *Backend) release(n int) {
	b.smu.Lock()
	defer b.smu.Unlock()
	b.synced = closeFirst(b.synced, n)
}

// closeFirst closes the first n of waiters (n < 0: all of them), oldest
// first, and returns the others.
func closeFirst(waiters []chan struct{}, n int) []chan struct{} {
	if n < 0 || n > len(waiters) {
		n = len(waiters)
	}
	for _, c := range waiters[:n] {
		close(c)
	}
	return waiters[n:]
}

func New(reg *events.Registry, m *kernel.Model, warn io.Writer) *Backend {
	// tracefs probes that a killed ktrace left behind (its reaper is the
	// first defence) go before this one attaches anything.
	tracer.CleanStale("")
	return &Backend{
		RegistryBackend: tracefs.NewRegistryBackend(reg),
		model:           m,
		warn:            warn,
		live:            map[evID]*tracer.Group{},
		done:            map[evID]counts{},
		hists:           newHistState(),
	}
}

// Available reports whether ktrace can attach probes for model m: m
// is the running kernel and tracer.Check passes.
func Available(m *kernel.Model) bool {
	return m.Source() == "host" && tracer.Check() == nil
}

// session returns the shared session, opening it (and starting its
// reader) at the first enable.
func (b *Backend) session() (*tracer.Session, error) {
	b.smu.Lock()
	defer b.smu.Unlock()
	if b.sess != nil {
		return b.sess, nil
	}
	sess, err := tracer.Open(tracer.Config{
		Model:       b.model,
		KprobeMulti: b.model.Config("CONFIG_FPROBE") == "y",
		// A kprobe event is a kprobe of the kernel's, listed in
		// debugfs's kprobes/list as the kernel's own event is.
		PlainKprobes: true,
		IgnoreTgid:   int(b.IgnorePID),
		Reaper:       b.Reaper,
		RingSize:     ringSize,
		Capacity:     capacity,
	})
	if err != nil {
		return nil, err
	}
	b.sess = sess
	b.pumpStop, b.pumpDone = make(chan struct{}), make(chan struct{})
	go b.pump(sess, b.pumpStop, b.pumpDone)
	return sess, nil
}

// SetEnabled attaches an event before marking it enabled and marks it
// disabled before detaching it; a failed attach leaves nothing attached
// and the event disabled. An event with active hist triggers stays
// attached while disabled, counting without tracing (soft mode).
func (b *Backend) SetEnabled(group, name string, on bool) error {
	err := b.setEnabled(group, name, on)
	// An fprobe entry traced through its own link, or no more, changes
	// which functions want a stand-in ftrace user.
	top := b
	b.smu.Lock()
	if b.top != nil {
		top = b.top
	}
	b.smu.Unlock()
	top.syncFprobes()
	return err
}

func (b *Backend) setEnabled(group, name string, on bool) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	ev := b.R.Event(group, name)
	if ev == nil {
		return syscall.ENOENT
	}
	// A synthetic event has no probe to attach: hist trigger actions
	// generate its records, which its switch lets through.
	if ev.Kind == events.Synthetic {
		return b.setSynthEnabled(ev, on)
	}
	if ev.Enabled == on {
		return b.R.SetEnabled(ev, on)
	}
	key := evID{ev.Group, ev.Name, ev.Serial}
	b.smu.Lock()
	attached := b.live[key] != nil
	b.smu.Unlock()
	if sw := b.hists.switches[key]; sw != nil && attached {
		// Its programs count its histograms either way: the switch
		// says whether they trace.
		if !on {
			if err := b.R.SetEnabled(ev, false); err != nil {
				return err
			}
			return setSwitch(sw, false)
		}
		if err := setSwitch(sw, true); err != nil {
			return err
		}
		if err := b.R.SetEnabled(ev, true); err != nil {
			setSwitch(sw, false)
			return err
		}
		return nil
	}
	if !on {
		if err := b.R.SetEnabled(ev, false); err != nil {
			return err
		}
		return b.reattach(ev, false)
	}
	if err := b.reattach(ev, true); err != nil {
		return err
	}
	if err := b.R.SetEnabled(ev, true); err != nil {
		b.reattach(ev, false)
		return err
	}
	return nil
}

// reattach detaches ev's programs and, when it is traced or has active
// hist triggers, attaches new ones that count its histograms and trace
// it when trace is set. An event probe on a synthetic event has no
// program of its own: the synthetic event's generators are compiled
// again, calling it or not. Called with mu held.
func (b *Backend) reattach(ev *events.Event, trace bool) error {
	err := b.reattachProbes(ev, trace)
	// Without the static events' tracer (closed, or never started) no
	// program generates synthetic records.
	if att := ev.Attached; ev.Kind == events.Eprobe && att.OnSynthetic() && b.static != nil {
		if rerr := b.regenerate(att.Name); rerr != nil {
			if b.warn != nil {
				fmt.Fprintf(b.warn, "ktrace: enable %s/%s: %v\n", ev.Group, ev.Name, rerr)
			}
			err = errors.Join(err, fmt.Errorf("attach %s/%s: %w", ev.Group, ev.Name, attachErrno(rerr)))
		}
	}
	return err
}

// reattachProbes is reattach for the event's own programs.
func (b *Backend) reattachProbes(ev *events.Event, trace bool) error {
	key := evID{ev.Group, ev.Name, ev.Serial}
	b.detach(key)
	hists := b.activeHists(key)
	if !trace && len(hists) == 0 && len(b.trig.of[key]) == 0 && !b.targeted(key) {
		return nil
	}
	if err := b.fillTargets(hists); err != nil {
		if b.warn != nil {
			fmt.Fprintf(b.warn, "ktrace: enable %s/%s: %v\n", ev.Group, ev.Name, err)
		}
		return fmt.Errorf("attach %s/%s: %w", ev.Group, ev.Name, attachErrno(err))
	}
	opts := tracer.EventOptions{Hists: hists, NoTrace: !trace}
	var err error
	if opts.TracingOn, err = b.tracing(); err == nil {
		opts.Triggers, err = b.eventTriggers(key)
	}
	if err != nil {
		if b.warn != nil {
			fmt.Fprintf(b.warn, "ktrace: enable %s/%s: %v\n", ev.Group, ev.Name, err)
		}
		return fmt.Errorf("attach %s/%s: %w", ev.Group, ev.Name, attachErrno(err))
	}
	if sw := b.hists.switches[key]; sw != nil {
		if err := setSwitch(sw, trace); err != nil {
			return err
		}
		opts.NoTrace, opts.TraceSwitch = false, sw
	}
	sess, err := b.session()
	var g *tracer.Group
	if err == nil {
		g, err = sess.AttachEvent(ev, opts)
	}
	if err != nil {
		errno := attachErrno(err)
		if b.warn != nil {
			fmt.Fprintf(b.warn, "ktrace: enable %s/%s: %v\n", ev.Group, ev.Name, err)
		}
		return fmt.Errorf("attach %s/%s: %w", ev.Group, ev.Name, errno)
	}
	b.smu.Lock()
	b.live[key] = g
	b.smu.Unlock()
	return nil
}

// attachErrno is the errno of a failed attach: the kernel's own when the
// tracer passes one on (register_kprobe's ENOENT, EINVAL, EILSEQ, ...),
// else ENOENT for a missing symbol and EINVAL for the rest.
func attachErrno(err error) syscall.Errno {
	var e syscall.Errno
	if errors.As(err, &e) {
		return e
	}
	if errors.Is(err, os.ErrNotExist) {
		return syscall.ENOENT
	}
	if errors.Is(err, os.ErrPermission) {
		return syscall.EPERM
	}
	return syscall.EINVAL
}

// detach detaches an event's probes and keeps their final counts; the
// records they wrote stay in the ring buffer for the reader.
func (b *Backend) detach(key evID) {
	b.smu.Lock()
	g := b.live[key]
	b.smu.Unlock()
	if g == nil {
		return
	}
	g.Detach()
	stats, _ := g.Stats()
	b.smu.Lock()
	c := b.done[key]
	for _, st := range stats {
		c.hits += st.Hits
		c.misses += st.Misses
	}
	b.done[key] = c
	delete(b.live, key)
	b.smu.Unlock()
}

// pumpPoll is how often the reader looks for a stop request while the
// ring buffer is quiet; records wake it earlier.
const pumpPoll = 100 * time.Millisecond

// pump moves the session's records into the trace ring until stopped,
// then what the ring buffer holds.
func (b *Backend) pump(sess *tracer.Session, stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	defer b.release(-1)
	dec := sess.Decoder()
	var buf []byte
	sess.Run(stop, pumpPoll, 0, tracer.RunHandler{
		// Each Sync call flushes once, in the order they wait.
		Flushed: b.release,
		Record: func(r *tracer.Record) bool {
			b.progress.Add(1)
			if b.IgnorePID != 0 && r.Tgid() == b.IgnorePID {
				// The server's own work; an interrupt that came upon
				// one of its threads is not, and the kernel records it.
				if flags, _ := r.Flags(); !bpfcode.InInterrupt(flags) {
					return true
				}
			}
			buf = dec.AppendContextRest(buf[:0], r)
			buf = dec.AppendBody(buf, r)
			if b.Record != nil && b.Record(r.TS, int(r.Pid()), string(r.Comm), buf) && b.Export != nil {
				b.Export(dec, r)
			}
			return true
		},
	})
}

// Events reports the live hit and miss counts of kprobe events (for
// kprobe_profile): those of the attached session plus the detached ones.
func (b *Backend) Events() []tracefs.EventInfo {
	evs := b.RegistryBackend.Events()
	b.smu.Lock()
	defer b.smu.Unlock()
	// Counts of removed events go with them.
	exists := make(map[evID]bool, len(evs))
	for i := range evs {
		exists[evID{evs[i].Group, evs[i].Name, evs[i].Serial}] = true
	}
	for _, m := range []map[evID]counts{b.done, b.gone} {
		for key := range m {
			if !exists[key] {
				delete(m, key)
			}
		}
	}
	var peers []map[evID]counts
	for p := range b.peers {
		peers = append(peers, p.ownCounts())
	}
	for i := range evs {
		key := evID{evs[i].Group, evs[i].Name, evs[i].Serial}
		c := b.countsLocked(key)
		c.add(b.gone[key])
		for _, pc := range peers {
			c.add(pc[key])
		}
		evs[i].Hits += c.hits
		evs[i].Misses += c.misses
	}
	return evs
}

func (c *counts) add(o counts) { c.hits, c.misses = c.hits+o.hits, c.misses+o.misses }

// countsLocked is what this backend's session counted for event key, its
// detached groups' and its attached one's. Called with smu held.
func (b *Backend) countsLocked(key evID) counts {
	c := b.done[key]
	if g := b.live[key]; g != nil {
		if stats, err := g.Stats(); err == nil {
			for _, st := range stats {
				c.add(counts{st.Hits, st.Misses})
			}
		}
	}
	return c
}

// ownCounts is countsLocked for every event this backend counted.
func (b *Backend) ownCounts() map[evID]counts {
	b.smu.Lock()
	defer b.smu.Unlock()
	out := make(map[evID]counts, len(b.done)+len(b.live))
	for key := range b.done {
		out[key] = b.countsLocked(key)
	}
	for key := range b.live {
		out[key] = b.countsLocked(key)
	}
	return out
}

// AddPeer makes p's counts part of b's (Events): p is a tracing
// instance's backend over a view of b's registry. The release it returns
// keeps what p counted in b once p is closed.
func (b *Backend) AddPeer(p *Backend) (release func()) {
	b.smu.Lock()
	if b.peers == nil {
		b.peers = map[*Backend]bool{}
	}
	b.peers[p] = true
	b.smu.Unlock()
	p.smu.Lock()
	p.top = b
	p.smu.Unlock()
	return func() {
		counted := p.ownCounts()
		b.smu.Lock()
		defer b.smu.Unlock()
		delete(b.peers, p)
		if b.gone == nil {
			b.gone = map[evID]counts{}
		}
		for key, c := range counted {
			g := b.gone[key]
			g.add(c)
			b.gone[key] = g
		}
	}
}

// Close disables every enabled event, which detaches it, then lets the
// reader pass on what the ring buffer holds and closes the session.
func (b *Backend) Close() {
	b.FollowTasks(false)
	b.SetFunctionTrace(nil)
	b.SetFunctionProbes(nil)
	b.closeStatic()
	for _, e := range b.RegistryBackend.Events() {
		if e.Enabled {
			b.SetEnabled(e.Group, e.Name, false)
		}
	}
	// Events in soft mode, then their histograms.
	b.mu.Lock()
	b.smu.Lock()
	var keys []evID
	for key := range b.live {
		keys = append(keys, key)
	}
	b.smu.Unlock()
	for _, key := range keys {
		b.detach(key)
	}
	b.closeHists()
	b.closeTriggers()
	b.mu.Unlock()
	if b.fpOps != nil {
		b.fpOps.shut()
	}
	b.smu.Lock()
	sess, stop, done := b.sess, b.pumpStop, b.pumpDone
	b.sess = nil
	b.smu.Unlock()
	if sess == nil {
		return
	}
	close(stop)
	<-done
	sess.Close()
}

// SetFilter gives an event its filter; an enabled event is attached again
// with programs that run it (the kernel swaps filters on a live event; here
// the hits between the detach and the attach are not seen).
func (b *Backend) SetFilter(group, name string, f *filter.Filter) error {
	if f != nil {
		if err := bpfcode.CheckFilter(f); err != nil {
			if b.warn != nil {
				fmt.Fprintf(b.warn, "ktrace: filter %s/%s: %v\n", group, name, err)
			}
			return fmt.Errorf("filter %s/%s: %w", group, name, syscall.EINVAL)
		}
	}
	b.mu.Lock()
	ev := b.R.Event(group, name)
	if ev == nil {
		b.mu.Unlock()
		return syscall.ENOENT
	}
	if err := b.R.SetFilter(ev, f); err != nil {
		b.mu.Unlock()
		return err
	}
	defer b.mu.Unlock()
	// The registry's event now has the filter.
	if ev = b.R.Event(group, name); ev == nil {
		return syscall.ENOENT
	}
	if ev.Kind == events.Synthetic {
		return b.regenerate(ev.Name)
	}
	b.smu.Lock()
	attached := b.live[evID{ev.Group, ev.Name, ev.Serial}] != nil
	b.smu.Unlock()
	if !attached {
		return nil
	}
	return b.reattach(ev, ev.Enabled)
}
