package tracefs

import (
	"io"
	"io/fs"
	"path"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/ktrace-dev/ktrace/kernel"
	"github.com/ktrace-dev/ktrace/trigger"
)

// Options tunes the kernel-version-dependent parts of an FS.
type Options struct {
	// Major and Minor select the kernel release whose file texts (README,
	// events/header_event, events/header_page) the FS shows: the nearest
	// known release at or below. Zero means the newest known (6.12).
	Major, Minor int
	// CPUs is the CPU count shown in trace's header ("#P:"); 0 means 1.
	CPUs int
	// Clock returns the time used for error_log timestamps. The default is
	// the monotonic time since New, the counterpart of the kernel's
	// local_clock() since boot.
	Clock func() time.Duration
	// PipeBlocks makes an empty trace_pipe read wait, as the kernel's does,
	// while some event is enabled: set it when the backend records through
	// Record. Without it trace_pipe reads end when the ring is empty.
	PipeBlocks bool
	// Root is who the tree shows where the kernel shows root (uid 0, gid
	// 0): the user of `ktrace sh`, the user who mounts. Zero is root.
	Root Owner
	// Mount holds tracefs's mount options uid=, gid= and mode=.
	Mount MountOptions
	// Static returns the kernel's static events (StaticEvents), in the
	// kernel's order; it is called once, when the events tree is first
	// used. Nil: no static events.
	Static func() []StaticEvent
	// Functions returns the functions ftrace can trace (the model's
	// FtraceRecords), called once at first use. Nil: the FS has no
	// function tracer and none of its files.
	Functions func() []kernel.FtraceRecord
	// StackTracer gives the FS the stack tracer's files (stack_trace,
	// stack_max_size, stack_trace_filter): KernelStack passes on the
	// running kernel's, EmulatedStack keeps them in the FS. Nil: no
	// stack tracer. They need the function tracer (Functions).
	StackTracer StackTracer
	// Warn receives ktrace's notes about what the tree shows but cannot
	// do (one line each, said once); nil drops them.
	Warn io.Writer
	// Instance makes the backend of each tracing instance (mkdir
	// instances/NAME). Nil: over a RegistryBackend, an emulated instance
	// of the registry's events; over another backend, mkdir fails with
	// EPERM.
	Instance InstanceMaker
}

// FS is one emulated tracefs instance.
type FS struct {
	b     Backend
	texts *releaseTexts
	cpus  int
	// cpumask is tracing_cpumask (nil: every CPU), guarded by mu.
	cpumask cpuMask
	// pipeGraph prints trace_pipe's function_graph records (guarded by
	// mu; reset when the tracer changes).
	pipeGraph *graphPrinter
	clock     func() time.Duration
	created   time.Time
	// pipeBlocks is Options.PipeBlocks.
	pipeBlocks bool
	// perms are the release's permissions, root and mount the owner and
	// mount options, rootPerm the root directory's permission.
	perms    releasePerms
	root     Owner
	mount    MountOptions
	rootPerm fs.FileMode

	mu        sync.Mutex
	errlog    []logRecord
	logged    uint64
	tracingOn bool
	// pausers counts the open readers of trace that pause recording
	// (options/pause-on-trace was set when they opened it).
	pausers  int
	filters  map[eventKey]*eventFilter
	triggers map[eventKey]*trigger.List
	ring     traceRing
	// snap is the snapshot file's spare buffer (snapshot.go); nil: freed.
	snap *traceRing
	// wasEnabled holds the probe events (by serial) that were enabled at
	// some time, in soft mode too: removing one clears the trace, as the
	// kernel does for an event file that was ever enabled (the entries
	// of a removed event could not be printed).
	wasEnabled map[uint64]bool
	// cond wakes trace_pipe readers (on f.mu) when an entry is recorded or
	// the enabled events change; gen counts the changes.
	cond *sync.Cond
	gen  uint64
	// shutdown is set by Shutdown: trace_pipe reads no longer wait.
	shutdown bool
	// comms is saved_cmdlines: each pid's command at its latest
	// recorded event (RecordTask), for the TASK-PID column.
	comms map[int]string

	// The generic ftrace files (ftrace.go, options.go): the trace options
	// of the release and their values, the ring buffer's per-CPU pages
	// and whether it has grown to its default size, the trace clock, and
	// set_event_pid / set_event_notrace_pid.
	opts        []traceOption
	optOn       []bool
	bufPages    uint64
	expanded    bool
	clockName   string
	clockConv   *traceClock // clockName's conversion (nil: local)
	eventPids   map[int]bool
	eventNoPids map[int]bool

	// made is the Options the FS was made with; an instance gets them too.
	made Options
	// parent is the top level of an instance's FS (nil at the top level);
	// instances are the top level's instances (instances.go), by name.
	parent    *FS
	instMu    sync.Mutex
	instances map[string]*instance
	// openFiles counts the open files: an instance with one cannot go.
	openFiles atomic.Int64

	warn       io.Writer
	staticFn   func() []StaticEvent
	staticOnce sync.Once
	static     atomic.Pointer[staticSet]

	// The function tracer (functions.go): current_tracer ("" is nop),
	// the selections and commands (guarded by mu), the open trace_pipe
	// readers (mu; the tracer cannot change while there are some) and
	// the records, loaded once (at the top level).
	tracer string
	funcs  funcState
	// subbufOrder is buffer_subbuf_size_kb's: the ring buffer's
	// sub-buffers are 4 KiB << subbufOrder (guarded by mu).
	subbufOrder int
	// graphConf is what set_graph_function, set_graph_notrace and
	// max_graph_depth hold, for the graph tracers of the top level and
	// its instances (nil: nothing set).
	graphConf atomic.Pointer[graphConf]
	// stack is the emulated stack tracer (Options.StackTracer).
	stack       stackState
	pipeReaders int
	funcOnce    sync.Once
	funcRecs    []kernel.FtraceRecord
}

// eventKey identifies an event instance; the ID keeps a filter from
// surviving into a new event that reuses the name.
type eventKey struct {
	group, name string
	id          int
}

// New returns an empty tracefs over the backend.
func New(b Backend, opts Options) *FS {
	f := &FS{
		b:         b,
		texts:     textsFor(opts.Major, opts.Minor),
		cpus:      opts.CPUs,
		clock:     opts.Clock,
		created:   time.Now(),
		tracingOn: true,
		filters:   map[eventKey]*eventFilter{},
		triggers:  map[eventKey]*trigger.List{},

		pipeBlocks: opts.PipeBlocks,
		root:       opts.Root,
		mount:      opts.Mount,
		rootPerm:   DefaultRootMode,

		bufPages:    bufMinPages,
		clockName:   "local",
		eventPids:   map[int]bool{},
		eventNoPids: map[int]bool{},
		warn:        opts.Warn,
		staticFn:    opts.Static,
		made:        opts,
	}
	f.perms = permsFor[f.texts.name]
	f.opts = optionsFor(f.texts.name)
	f.optOn = make([]bool, len(f.opts))
	for i, o := range f.opts {
		f.optOn[i] = o.def
	}
	if opts.Mount.Mode != nil {
		// As tracefs_parse_param: the mode is masked with S_IALLUGO.
		f.rootPerm = unixPerm(*opts.Mount.Mode & 0o7777)
	}
	f.cond = sync.NewCond(&f.mu)
	if f.cpus <= 0 {
		f.cpus = 1
	}
	f.ring.limit = f.ringLimit()
	if f.clock == nil {
		start := f.created
		f.clock = func() time.Duration { return time.Since(start) }
	}
	return f
}

// Backend returns the event model behind the FS.
func (f *FS) Backend() Backend { return f.b }

type nodeKind int

const (
	nNone nodeKind = iota
	nRoot
	nReadme
	nKprobeEvents
	nDynamicEvents
	nSyntheticEvents
	nUprobeEvents
	nErrorLog
	nKprobeProfile
	nUprobeProfile
	nTrace
	nTracePipe
	nTracingOn
	nEvents
	nEventsEnable
	nHeaderEvent
	nHeaderPage
	nGroup
	nGroupEnable
	nGroupFilter
	nEvent
	nEvEnable
	nEvFilter
	nEvFormat
	nEvHist
	nEvID
	nEvTrigger
	nAvailableEvents
	nAvailableTracers
	nBufferSizeKB
	nBufferTotalKB
	nCurrentTracer
	nOptions
	nOption
	nSetEvent
	nSetEventPid
	nSetEventNotracePid
	nTraceClock
	nTracingCpumask
	nTraceMarker
	nTraceOptions
	nSnapshot
	nInstances
	nInstance
	nAvailableFuncs
	nAvailableFuncAddrs
	nSetFtraceFilter
	nSetFtraceNotrace
	nSetFtracePid
	nSetFtraceNotracePid
	nStackTrace
	nStackMaxSize
	nStackFilter
	nSetGraphFunction
	nSetGraphNotrace
	nMaxGraphDepth
	nBufferSubbufKB
)

// entry is a static directory entry: its name, kind and permission bits
// (tracefs's TRACE_MODE_READ 0440 and TRACE_MODE_WRITE 0640); a directory
// has fs.ModeDir alone here and takes its permission from dirMode.
type entry struct {
	name string
	kind nodeKind
	mode fs.FileMode
}

var rootEntries = []entry{
	{"README", nReadme, modeRead},
	{"available_events", nAvailableEvents, modeRead},
	{"available_filter_functions", nAvailableFuncs, modeRead},
	{"available_filter_functions_addrs", nAvailableFuncAddrs, modeRead},
	{"available_tracers", nAvailableTracers, modeRead},
	{"buffer_size_kb", nBufferSizeKB, modeWrite},
	{"buffer_subbuf_size_kb", nBufferSubbufKB, modeWrite},
	{"buffer_total_size_kb", nBufferTotalKB, modeRead},
	{"current_tracer", nCurrentTracer, modeWrite},
	{"dynamic_events", nDynamicEvents, modeWrite},
	{"error_log", nErrorLog, modeWrite},
	{"events", nEvents, fs.ModeDir},
	{"instances", nInstances, fs.ModeDir},
	{"kprobe_events", nKprobeEvents, modeWrite},
	{"kprobe_profile", nKprobeProfile, modeRead},
	{"max_graph_depth", nMaxGraphDepth, modeWrite},
	{"options", nOptions, fs.ModeDir},
	{"set_event", nSetEvent, modeWrite},
	{"set_event_notrace_pid", nSetEventNotracePid, modeWrite},
	{"set_event_pid", nSetEventPid, modeWrite},
	{"set_ftrace_filter", nSetFtraceFilter, modeWrite},
	{"set_ftrace_notrace", nSetFtraceNotrace, modeWrite},
	{"set_ftrace_notrace_pid", nSetFtraceNotracePid, modeWrite},
	{"set_ftrace_pid", nSetFtracePid, modeWrite},
	{"set_graph_function", nSetGraphFunction, modeWrite},
	{"set_graph_notrace", nSetGraphNotrace, modeWrite},
	{"snapshot", nSnapshot, modeWrite},
	{"stack_max_size", nStackMaxSize, modeWrite},
	{"stack_trace", nStackTrace, modeRead},
	{"stack_trace_filter", nStackFilter, modeWrite},
	{"synthetic_events", nSyntheticEvents, modeWrite},
	{"trace", nTrace, modeWrite},
	{"trace_clock", nTraceClock, modeWrite},
	{"trace_marker", nTraceMarker, modeMarker},
	{"trace_options", nTraceOptions, modeWrite},
	{"trace_pipe", nTracePipe, modeRead},
	{"tracing_cpumask", nTracingCpumask, modeWrite},
	{"tracing_on", nTracingOn, modeWrite},
	{"uprobe_events", nUprobeEvents, modeWrite},
	{"uprobe_profile", nUprobeProfile, modeRead},
}

var eventsEntries = []entry{
	{"enable", nEventsEnable, modeWrite},
	{"header_event", nHeaderEvent, modeRead},
	{"header_page", nHeaderPage, modeRead},
}

var groupEntries = []entry{
	{"enable", nGroupEnable, modeWrite},
	{"filter", nGroupFilter, modeWrite},
}

var eventEntries = []entry{
	{"enable", nEvEnable, modeWrite},
	{"filter", nEvFilter, modeWrite},
	{"format", nEvFormat, modeRead},
	{"hist", nEvHist, modeRead},
	{"id", nEvID, modeRead},
	{"trigger", nEvTrigger, modeWrite},
}

// node is a resolved path.
type node struct {
	kind         nodeKind
	mode         fs.FileMode
	base         string // last path component
	group, event string // for the events/GROUP/EVENT subtree
}

func (n node) isDir() bool { return n.mode.IsDir() }

// clean turns a path relative to the tracefs root (a leading "/" is
// allowed) into its cleaned components.
func clean(p string) []string {
	p = path.Clean("/" + p)
	if p == "/" {
		return nil
	}
	return strings.Split(p[1:], "/")
}

func lookup(list []entry, name string) (entry, bool) {
	for _, e := range list {
		if e.name == name {
			return e, true
		}
	}
	return entry{}, false
}

// resolve finds the node for a path, consulting the backend for the
// dynamic part of the events/ tree.
func (f *FS) resolve(p string) (node, error) {
	parts := clean(p)
	if len(parts) == 0 {
		return node{kind: nRoot, mode: f.dirMode(nRoot), base: "."}, nil
	}
	e, ok := lookup(f.rootList(), parts[0])
	if !ok {
		return node{}, syscall.ENOENT
	}
	if e.kind == nInstances {
		switch {
		case len(parts) == 1:
			return node{kind: nInstances, mode: f.dirMode(nInstances), base: e.name}, nil
		case len(parts) == 2 && f.instance(parts[1]) != nil:
			return node{kind: nInstance, mode: f.dirMode(nInstance), base: parts[1]}, nil
		}
		return node{}, syscall.ENOENT
	}
	if e.kind == nOptions {
		if len(parts) == 1 {
			return node{kind: nOptions, mode: f.dirMode(nOptions), base: e.name}, nil
		}
		if _, ok := f.option(parts[1]); !ok {
			return node{}, syscall.ENOENT
		}
		if len(parts) > 2 {
			return node{}, syscall.ENOTDIR
		}
		return node{kind: nOption, mode: modeWrite, base: parts[1]}, nil
	}
	if e.kind != nEvents {
		if len(parts) > 1 {
			return node{}, syscall.ENOTDIR
		}
		return node{kind: e.kind, mode: e.mode, base: e.name}, nil
	}
	if len(parts) == 1 {
		return node{kind: nEvents, mode: f.dirMode(nEvents), base: e.name}, nil
	}
	evs := f.b.Events()
	group := parts[1]
	// A file of events/ wins over a group of its name: the kernel's
	// eventfs would let the group shadow it only if the file had never
	// been looked up before the group came, and events/enable and the
	// header files are read early on any system in use (seen on 6.12: a
	// script that read events/enable before defining "p:enable/ev" finds
	// the file).
	if e, ok := lookup(eventsEntries, parts[1]); ok {
		if len(parts) > 2 {
			return node{}, syscall.ENOTDIR
		}
		return node{kind: e.kind, mode: e.mode, base: e.name}, nil
	}
	if !f.hasGroupAny(evs, group) {
		return node{}, syscall.ENOENT
	}
	if len(parts) == 2 {
		return node{kind: nGroup, mode: f.dirMode(nGroup), base: group, group: group}, nil
	}
	ev, isEvent := f.findEventAny(evs, group, parts[2])
	if e, ok := lookup(groupEntries, parts[2]); ok && !(f.perms.eventfs && isEvent) && !f.statics().internal[group] {
		if len(parts) > 3 {
			return node{}, syscall.ENOTDIR
		}
		return node{kind: e.kind, mode: e.mode, base: e.name, group: group}, nil
	}
	if !isEvent {
		return node{}, syscall.ENOENT
	}
	if len(parts) == 3 {
		return node{kind: nEvent, mode: f.dirMode(nEvent), base: parts[2], group: group, event: parts[2]}, nil
	}
	files := eventEntries
	if ev.Internal {
		files = internalEntries(group, parts[2])
	}
	e, ok = lookup(files, parts[3])
	if !ok {
		return node{}, syscall.ENOENT
	}
	if len(parts) > 4 {
		return node{}, syscall.ENOTDIR
	}
	return node{kind: e.kind, mode: e.mode, base: e.name, group: group, event: parts[2]}, nil
}

func hasGroup(evs []EventInfo, group string) bool {
	for _, e := range evs {
		if e.Group == group {
			return true
		}
	}
	return false
}

func findEvent(evs []EventInfo, group, name string) (EventInfo, bool) {
	for _, e := range evs {
		if e.Group == group && e.Name == name {
			return e, true
		}
	}
	return EventInfo{}, false
}

// withShadows appends a directory's files and subdirectories to list as
// the release lists them when a subdirectory has a file's name: when the
// directory shadows the file (shadow: eventfs, below a group) both names
// appear, the file's described as the directory its name now resolves
// to; otherwise only the file appears (on tracefs the directory was never
// created).
func (f *FS) withShadows(list []fileInfo, files []entry, dirs []fileInfo, shadow bool) []fileInfo {
	byName := map[string]fileInfo{}
	for _, d := range dirs {
		byName[d.name] = d
	}
	for _, e := range files {
		if d, ok := byName[e.name]; ok && shadow {
			list = append(list, d)
			continue
		}
		list = append(list, f.info(e.name, e.kind, e.mode))
	}
	for _, d := range dirs {
		if _, isFile := lookup(files, d.name); isFile && !shadow {
			continue
		}
		list = append(list, d)
	}
	return list
}

// fileInfo implements fs.FileInfo for tracefs nodes. Like tracefs, every
// file reports size 0. Sys() is the file's Owner.
type fileInfo struct {
	name  string
	mode  fs.FileMode
	mtime time.Time
	owner Owner
}

func (i fileInfo) Name() string       { return i.name }
func (i fileInfo) Size() int64        { return 0 }
func (i fileInfo) Mode() fs.FileMode  { return i.mode }
func (i fileInfo) ModTime() time.Time { return i.mtime }
func (i fileInfo) IsDir() bool        { return i.mode.IsDir() }
func (i fileInfo) Sys() any           { return i.owner }

// info describes a node.
func (f *FS) info(name string, k nodeKind, mode fs.FileMode) fileInfo {
	if mode.IsDir() {
		mode = f.dirMode(k)
	}
	return fileInfo{name: name, mode: mode, mtime: f.created, owner: f.owner(k)}
}

func pathErr(op, name string, err error) error {
	return &fs.PathError{Op: op, Path: name, Err: err}
}

// Stat describes the file at name (relative to the tracefs root). Errors
// are *fs.PathError holding a syscall.Errno.
func (f *FS) Stat(name string) (fs.FileInfo, error) {
	if sub, rest, err := f.route(name); err != nil {
		return nil, pathErr("stat", name, err)
	} else if sub != f {
		return sub.Stat(rest)
	}
	n, err := f.resolve(name)
	if err != nil {
		return nil, pathErr("stat", name, err)
	}
	return f.info(n.base, n.kind, n.mode), nil
}

// ReadDir lists a directory sorted by name. Errors are *fs.PathError
// holding a syscall.Errno.
func (f *FS) ReadDir(name string) ([]fs.DirEntry, error) {
	if sub, rest, err := f.route(name); err != nil {
		return nil, pathErr("readdir", name, err)
	} else if sub != f {
		return sub.ReadDir(rest)
	}
	n, err := f.resolve(name)
	if err != nil {
		return nil, pathErr("readdir", name, err)
	}
	var list []fileInfo
	add := func(es []entry) {
		for _, e := range es {
			list = append(list, f.info(e.name, e.kind, e.mode))
		}
	}
	switch n.kind {
	case nRoot:
		add(f.rootList())
	case nInstances:
		for _, in := range f.instanceNames() {
			list = append(list, f.info(in, nInstance, fs.ModeDir))
		}
	case nInstance:
		if in := f.instance(n.base); in != nil {
			return in.fs.ReadDir("")
		}
		return nil, pathErr("readdir", name, syscall.ENOENT)
	case nOptions:
		for _, o := range f.opts {
			list = append(list, f.info(o.name, nOption, modeWrite))
		}
	case nEvents:
		seen := map[string]bool{}
		var dirs []fileInfo
		for _, e := range append(f.events(), f.internalEvents()...) {
			if !seen[e.Group] {
				seen[e.Group] = true
				dirs = append(dirs, f.info(e.Group, nGroup, fs.ModeDir))
			}
		}
		list = f.withShadows(list, eventsEntries, dirs, false)
	case nGroup:
		var dirs []fileInfo
		for _, e := range append(f.events(), f.internalEvents()...) {
			if e.Group == n.group {
				dirs = append(dirs, f.info(e.Name, nEvent, fs.ModeDir))
			}
		}
		if f.statics().internal[n.group] {
			list = dirs
			break
		}
		list = f.withShadows(list, groupEntries, dirs, f.perms.eventfs)
	case nEvent:
		if f.statics().internal[n.group] {
			add(internalEntries(n.group, n.base))
			break
		}
		add(eventEntries)
	default:
		return nil, pathErr("readdir", name, syscall.ENOTDIR)
	}
	sort.Slice(list, func(i, j int) bool { return list[i].name < list[j].name })
	out := make([]fs.DirEntry, len(list))
	for i, fi := range list {
		out[i] = fs.FileInfoToDirEntry(fi)
	}
	return out, nil
}

// Stable reports whether the path name (relative to the tracefs root)
// names an entry that exists, as the same kind of file, for the life of
// the tree: the root's files and directories, options/ and its options,
// events/ and its files, the static events' groups and directories and
// their files. Dynamic events and their groups come and go, and on eventfs
// kernels (6.12) an event named "enable" or "filter" shadows its group's
// file, so a group's files are stable only where no event can shadow
// them. A FUSE mount may let the kernel cache stable entries.
func (f *FS) Stable(name string) bool {
	parts := clean(name)
	if len(parts) == 0 {
		return true
	}
	e, ok := lookup(f.rootList(), parts[0])
	switch {
	case !ok:
		return false
	case len(parts) == 1:
		return true
	case e.kind == nInstances:
		// Instances come and go.
		return false
	case e.kind == nOptions:
		_, ok := f.option(parts[1])
		return ok && len(parts) == 2
	case e.kind != nEvents:
		return false
	}
	if _, ok := lookup(eventsEntries, parts[1]); ok {
		return len(parts) == 2
	}
	s := f.statics()
	if !s.groups[parts[1]] {
		return false
	}
	switch len(parts) {
	case 2:
		return true
	case 3:
		if _, ok := s.index[parts[1]+"/"+parts[2]]; ok {
			return true
		}
		_, ok := lookup(groupEntries, parts[2])
		return ok && !f.perms.eventfs && !s.internal[parts[1]]
	case 4:
		if _, ok := s.index[parts[1]+"/"+parts[2]]; !ok {
			return false
		}
		files := eventEntries
		if s.internal[parts[1]] {
			files = internalEntries(parts[1], parts[2])
		}
		_, ok := lookup(files, parts[3])
		return ok
	}
	return false
}
