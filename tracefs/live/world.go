package live

import (
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/ktrace-dev/ktrace/events"
	"github.com/ktrace-dev/ktrace/grammar"
	"github.com/ktrace-dev/ktrace/kernel"
	"github.com/ktrace-dev/ktrace/session"
	"github.com/ktrace-dev/ktrace/tracefs"
	"github.com/ktrace-dev/ktrace/tracer"
)

// EmulatedNote is the stderr line of `ktrace sh` and `ktrace mount` where
// probes cannot attach (see Note).
const EmulatedNote = "ktrace: no probe backend: events are emulated, no event records into trace"

// Access is the ownership of a mount's tree: the mounting user in root's
// place, and tracefs's mount options uid=, gid= and mode=.
type Access struct {
	Root tracefs.Owner
	Opts tracefs.MountOptions
}

// Config says what tracefs a World is.
type Config struct {
	Model   *kernel.Model
	Dialect *grammar.Dialect
	// Mount is the ownership of a mount's tree (`ktrace mount`); nil is
	// root's tree as `ktrace sh` shows it. On a live mount the server's
	// own hits are dropped: its reads of the probed functions would
	// otherwise feed the ring while it serves them.
	Mount *Access
	// Reaper is the executable the tracer session starts as its reaper
	// ("" for none).
	Reaper string
	// Warn receives the tree's and the backend's notes.
	Warn io.Writer
	// Export receives each dynamic event's record that goes into a
	// trace (Backend.Export), of the top level and of every instance;
	// the calls are serialised.
	Export func(*tracer.Decoder, *tracer.Record)
}

// World is one tracefs over a fresh event registry: over the live backend
// when probes can attach to the running kernel (Available), else over the
// emulation alone.
type World struct {
	Reg *events.Registry
	FS  *tracefs.FS
	// Note is the one stderr line naming the backend (Note or
	// EmulatedNote); Live says whether it is the live one.
	Note  string
	Live  bool
	close func()
	// top is the top level's live backend (nil when emulated).
	top *Backend
}

// Open makes the World of c.
func Open(c Config) *World {
	reg := events.NewRegistry(c.Model, c.Dialect)
	if !Available(c.Model) {
		opts := c.options(false)
		if c.Model.Config("CONFIG_STACK_TRACER") == "y" {
			opts.StackTracer = tracefs.EmulatedStack()
		}
		fsys := tracefs.New(tracefs.NewRegistryBackend(reg), opts)
		return &World{Reg: reg, FS: fsys, Note: EmulatedNote, close: func() {}}
	}
	if c.Export != nil {
		var mu sync.Mutex
		export := c.Export
		c.Export = func(d *tracer.Decoder, r *tracer.Record) {
			mu.Lock()
			export(d, r)
			mu.Unlock()
		}
	}
	lb := c.backend(reg)
	lb.TrackFprobes()
	opts := c.options(true)
	if dir := c.Model.Tracefs(); tracefs.HasKernelStack(dir) {
		// The kernel's stack tracer is switched by its sysctl, not
		// through tracefs: its files are the kernel's own.
		opts.StackTracer = tracefs.KernelStack{Dir: dir}
	}
	opts.Instance = func() (tracefs.Backend, func(*tracefs.FS), func(), error) {
		// An instance traces through a session of its own: its own ring,
		// maps, programs and triggers, over its view of the events; the
		// top level's kprobe_profile counts its hits too.
		view := reg.Instance()
		ib := c.backend(view)
		unpeer := lb.AddPeer(ib)
		bind := func(fsys *tracefs.FS) {
			ib.Record = fsys.RecordTask
			ib.RecordGraph = fsys.RecordGraph
			ib.TaskForked, ib.TaskFreed = fsys.TaskForked, fsys.TaskFreed
			ib.TraceOptions = fsys
		}
		release := func() {
			ib.Close()
			unpeer()
			view.Close()
		}
		return ib, bind, release, nil
	}
	fsys := tracefs.New(lb, opts)
	lb.Record = fsys.RecordTask
	lb.RecordGraph = fsys.RecordGraph
	lb.TaskForked, lb.TaskFreed = fsys.TaskForked, fsys.TaskFreed
	lb.TraceOptions = fsys
	return &World{Reg: reg, FS: fsys, Note: Note, Live: true, close: lb.Close, top: lb}
}

// backend makes a live backend over reg (the registry or an instance's
// view of it).
func (c Config) backend(reg *events.Registry) *Backend {
	lb := New(reg, c.Model, c.Warn)
	lb.Reaper = c.Reaper
	lb.Export = c.Export
	if c.Mount != nil {
		lb.IgnorePID = uint32(os.Getpid())
	}
	return lb
}

// options are the tracefs options of the model's release.
func (c Config) options(pipeBlocks bool) tracefs.Options {
	m := c.Model
	o := tracefs.Options{
		Major:      c.Dialect.Major,
		Minor:      c.Dialect.Minor,
		CPUs:       m.CPUs(),
		PipeBlocks: pipeBlocks,
		Static:     func() []tracefs.StaticEvent { return tracefs.StaticEvents(m) },
		Functions:  m.FtraceRecords,
		Warn:       c.Warn,
	}
	if c.Mount != nil {
		o.Root, o.Mount = c.Mount.Root, c.Mount.Opts
	}
	return o
}

// Close detaches whatever is still attached, the instances' too.
// EventCounts are the dynamic events' hits and misses as kprobe_profile
// counts them (instances' hits included), by GROUP/EVENT; none when
// emulated.
func (w *World) EventCounts() []tracefs.EventInfo {
	if w.top == nil {
		return nil
	}
	return w.top.Events()
}

func (w *World) Close() {
	w.FS.RemoveInstances()
	w.close()
}

// DetachAll disables (through the backend, which detaches attached
// probes) and removes every event, so that nothing a mount created
// outlives it.
func (w *World) DetachAll() {
	w.FS.RemoveInstances()
	b := w.FS.Backend()
	for _, ev := range b.Events() {
		if ev.Enabled {
			b.SetEnabled(ev.Group, ev.Name, false)
		}
	}
	// dynamic_events' scope is every dynamic event.
	w.Reg.Truncate(events.DynamicEvents)
}

// Replayer replays a session into w as a script would: each line written
// to dynamic_events, each filter to its event's filter file, each enabled
// event through its enable file (with the live backend it attaches).
func (w *World) Replayer() session.Replayer {
	define := func(line string) error {
		h, err := w.FS.Open(tracefs.DynamicEvents.String(), os.O_WRONLY|os.O_APPEND)
		if err != nil {
			return err
		}
		defer h.Close()
		_, err = h.Write([]byte(line + "\n"))
		return err
	}
	enable := func(ev *events.Event) error {
		h, err := w.FS.Open("events/"+ev.Group+"/"+ev.Name+"/enable", os.O_WRONLY|os.O_TRUNC)
		if err != nil {
			return fmt.Errorf("open enable: %w", err)
		}
		defer h.Close()
		if _, err := h.Write([]byte("1\n")); err != nil {
			return fmt.Errorf("write enable: %w", err)
		}
		return nil
	}
	filter := func(ev *events.Event, expr string) error {
		h, err := w.FS.Open("events/"+ev.Group+"/"+ev.Name+"/filter", os.O_WRONLY|os.O_TRUNC)
		if err != nil {
			return fmt.Errorf("open filter: %w", err)
		}
		defer h.Close()
		if _, err := h.Write([]byte(expr + "\n")); err != nil {
			return fmt.Errorf("write filter: %w", err)
		}
		return nil
	}
	return session.Replayer{Define: define, Filter: filter, Enable: enable}
}

// AccessNotes are the stderr lines of a mount whose options grant users
// besides the mounting one access: without allowOther (FUSE allow_other)
// that the options grant nothing, on a live mount who can define probes
// and read what they record.
func (w *World) AccessNotes(acc *Access, allowOther bool) []string {
	if !acc.Opts.GrantsOthers(acc.Root) {
		return nil
	}
	if !allowOther {
		return []string{"ktrace: note: without --allow-other only the invoking user can reach the mount; --uid and --mode grant others nothing"}
	}
	if !w.Live {
		return nil
	}
	var out []string
	for _, l := range tracefs.AccessWarnings(w.FS, acc.Root) {
		out = append(out, "ktrace: warning: this mount attaches probes to the running kernel: "+l)
	}
	return out
}
