// Package tracefs is an in-memory tracefs: the probe-related files of
// /sys/kernel/tracing with the kernel's file semantics, backed by a model
// of the probe events (Backend). Writing a probe definition to kprobe_events
// or dynamic_events succeeds or fails exactly as on Linux, rejected commands
// land in error_log, and the events/ tree lists the events with their enable,
// id and format files.
//
// The API is front-end neutral (Open/Stat/ReadDir and file handles with
// Read/Write/Close, errors as syscall.Errno) so the same FS can back ktrace's
// shell, its CLI and a FUSE mount. An FS is safe for concurrent use.
//
// A backend that attaches real probes feeds the trace ring through
// FS.Record: trace shows the entries under the kernel's header, trace_pipe
// consumes them, a truncating open of trace clears them and tracing_on 0
// stops recording. Without one nothing is ever recorded: trace shows only
// its header, trace_pipe reads end immediately (the kernel would block
// waiting for events that cannot come) and every hit counter stays zero.
package tracefs

import (
	"io/fs"
	"path"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"
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
}

// FS is one emulated tracefs instance.
type FS struct {
	b       Backend
	texts   *releaseTexts
	cpus    int
	clock   func() time.Duration
	created time.Time
	// pipeBlocks is Options.PipeBlocks.
	pipeBlocks bool

	mu        sync.Mutex
	errlog    []logRecord
	logged    uint64
	tracingOn bool
	filters   map[eventKey]string // filter file content
	ring      traceRing
	// cond wakes trace_pipe readers (on f.mu) when an entry is recorded or
	// the enabled events change; gen counts the changes.
	cond *sync.Cond
	gen  uint64
	// shutdown is set by Shutdown: trace_pipe reads no longer wait.
	shutdown bool
	// comms is saved_cmdlines: each pid's command at its latest
	// recorded event (RecordTask), for the TASK-PID column.
	comms map[int]string
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
		filters:   map[eventKey]string{},

		pipeBlocks: opts.PipeBlocks,
	}
	f.cond = sync.NewCond(&f.mu)
	if f.cpus <= 0 {
		f.cpus = 1
	}
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
	nErrorLog
	nKprobeProfile
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
)

// entry is a static directory entry: its name, kind and permission bits
// (tracefs's TRACE_MODE_READ 0440 and TRACE_MODE_WRITE 0640).
type entry struct {
	name string
	kind nodeKind
	mode fs.FileMode
}

var rootEntries = []entry{
	{"README", nReadme, 0o440},
	{"dynamic_events", nDynamicEvents, 0o640},
	{"error_log", nErrorLog, 0o640},
	{"events", nEvents, fs.ModeDir | 0o755},
	{"kprobe_events", nKprobeEvents, 0o640},
	{"kprobe_profile", nKprobeProfile, 0o440},
	{"trace", nTrace, 0o640},
	{"trace_pipe", nTracePipe, 0o440},
	{"tracing_on", nTracingOn, 0o640},
}

var eventsEntries = []entry{
	{"enable", nEventsEnable, 0o640},
	{"header_event", nHeaderEvent, 0o440},
	{"header_page", nHeaderPage, 0o440},
}

var groupEntries = []entry{
	{"enable", nGroupEnable, 0o640},
	{"filter", nGroupFilter, 0o640},
}

var eventEntries = []entry{
	{"enable", nEvEnable, 0o640},
	{"filter", nEvFilter, 0o640},
	{"format", nEvFormat, 0o440},
	{"hist", nEvHist, 0o440},
	{"id", nEvID, 0o440},
	{"trigger", nEvTrigger, 0o640},
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
		return node{kind: nRoot, mode: fs.ModeDir | 0o700, base: "."}, nil
	}
	e, ok := lookup(rootEntries, parts[0])
	if !ok {
		return node{}, syscall.ENOENT
	}
	if e.kind != nEvents {
		if len(parts) > 1 {
			return node{}, syscall.ENOTDIR
		}
		return node{kind: e.kind, mode: e.mode, base: e.name}, nil
	}
	if len(parts) == 1 {
		return node{kind: nEvents, mode: e.mode, base: e.name}, nil
	}
	if e, ok := lookup(eventsEntries, parts[1]); ok {
		if len(parts) > 2 {
			return node{}, syscall.ENOTDIR
		}
		return node{kind: e.kind, mode: e.mode, base: e.name}, nil
	}
	group := parts[1]
	evs := f.b.Events()
	if !hasGroup(evs, group) {
		return node{}, syscall.ENOENT
	}
	if len(parts) == 2 {
		return node{kind: nGroup, mode: fs.ModeDir | 0o755, base: group, group: group}, nil
	}
	if e, ok := lookup(groupEntries, parts[2]); ok {
		if len(parts) > 3 {
			return node{}, syscall.ENOTDIR
		}
		return node{kind: e.kind, mode: e.mode, base: e.name, group: group}, nil
	}
	if _, ok := findEvent(evs, group, parts[2]); !ok {
		return node{}, syscall.ENOENT
	}
	if len(parts) == 3 {
		return node{kind: nEvent, mode: fs.ModeDir | 0o755, base: parts[2], group: group, event: parts[2]}, nil
	}
	e, ok = lookup(eventEntries, parts[3])
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

// fileInfo implements fs.FileInfo for tracefs nodes. Like tracefs, every
// file reports size 0.
type fileInfo struct {
	name  string
	mode  fs.FileMode
	mtime time.Time
}

func (i fileInfo) Name() string       { return i.name }
func (i fileInfo) Size() int64        { return 0 }
func (i fileInfo) Mode() fs.FileMode  { return i.mode }
func (i fileInfo) ModTime() time.Time { return i.mtime }
func (i fileInfo) IsDir() bool        { return i.mode.IsDir() }
func (i fileInfo) Sys() any           { return nil }

func pathErr(op, name string, err error) error {
	return &fs.PathError{Op: op, Path: name, Err: err}
}

// Stat describes the file at name (relative to the tracefs root). Errors
// are *fs.PathError holding a syscall.Errno.
func (f *FS) Stat(name string) (fs.FileInfo, error) {
	n, err := f.resolve(name)
	if err != nil {
		return nil, pathErr("stat", name, err)
	}
	return fileInfo{name: n.base, mode: n.mode, mtime: f.created}, nil
}

// ReadDir lists a directory sorted by name. Errors are *fs.PathError
// holding a syscall.Errno.
func (f *FS) ReadDir(name string) ([]fs.DirEntry, error) {
	n, err := f.resolve(name)
	if err != nil {
		return nil, pathErr("readdir", name, err)
	}
	var list []fileInfo
	add := func(es []entry) {
		for _, e := range es {
			list = append(list, fileInfo{name: e.name, mode: e.mode, mtime: f.created})
		}
	}
	switch n.kind {
	case nRoot:
		add(rootEntries)
	case nEvents:
		add(eventsEntries)
		seen := map[string]bool{}
		for _, e := range f.b.Events() {
			if !seen[e.Group] {
				seen[e.Group] = true
				list = append(list, fileInfo{name: e.Group, mode: fs.ModeDir | 0o755, mtime: f.created})
			}
		}
	case nGroup:
		add(groupEntries)
		for _, e := range f.b.Events() {
			if e.Group == n.group {
				list = append(list, fileInfo{name: e.Name, mode: fs.ModeDir | 0o755, mtime: f.created})
			}
		}
	case nEvent:
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
