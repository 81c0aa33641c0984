package tracefs

import (
	"io/fs"
	"sort"
	"strings"
	"syscall"

	"github.com/ktrace-dev/ktrace/trigger"
)

// Tracing instances: `mkdir instances/NAME` makes a new tracing directory
// (the kernel's trace_array) with its own trace buffer, tracing_on,
// options, snapshot, error_log and event files, each event with its own
// enable, filter and triggers; the event definitions are the top level's.
// ktrace makes an instance an FS of its own, over a backend the
// InstanceMaker makes, and routes the paths below instances/NAME to it.

// InstanceMaker makes the backend of a new tracing instance: b shows the
// top level's events with the instance's own state (events.Registry's
// Instance), bind is called with the instance's FS before it is used (a
// live backend records into it), and release frees what b holds once
// the instance's events are disabled and its triggers gone (rmdir). A nil
// bind or release is skipped.
type InstanceMaker func() (b Backend, bind func(*FS), release func(), err error)

// instance is one directory of instances/.
type instance struct {
	fs      *FS
	release func()
}

// instanceEntries are an instance directory's files: those of the top
// level that the kernel's instances have too (no control files, no
// README, no profiles, no available_events, no instances/).
var instanceEntries = []entry{
	{"available_tracers", nAvailableTracers, modeRead},
	{"buffer_size_kb", nBufferSizeKB, modeWrite},
	{"buffer_subbuf_size_kb", nBufferSubbufKB, modeWrite},
	{"buffer_total_size_kb", nBufferTotalKB, modeRead},
	{"current_tracer", nCurrentTracer, modeWrite},
	{"error_log", nErrorLog, modeWrite},
	{"events", nEvents, fs.ModeDir},
	{"options", nOptions, fs.ModeDir},
	{"set_event", nSetEvent, modeWrite},
	{"set_event_notrace_pid", nSetEventNotracePid, modeWrite},
	{"set_event_pid", nSetEventPid, modeWrite},
	{"set_ftrace_filter", nSetFtraceFilter, modeWrite},
	{"set_ftrace_notrace", nSetFtraceNotrace, modeWrite},
	{"set_ftrace_notrace_pid", nSetFtraceNotracePid, modeWrite},
	{"set_ftrace_pid", nSetFtracePid, modeWrite},
	{"snapshot", nSnapshot, modeWrite},
	{"trace", nTrace, modeWrite},
	{"trace_clock", nTraceClock, modeWrite},
	{"trace_marker", nTraceMarker, modeMarker},
	{"trace_options", nTraceOptions, modeWrite},
	{"trace_pipe", nTracePipe, modeRead},
	{"tracing_cpumask", nTracingCpumask, modeWrite},
	{"tracing_on", nTracingOn, modeWrite},
}

// rootList is the FS's root directory: the top level's, or an instance's.
func (f *FS) rootList() []entry {
	list := rootEntries
	if f.parent != nil {
		list = instanceEntries
	}
	var out []entry
	for _, e := range list {
		if f.hasEntry(e.kind) {
			out = append(out, e)
		}
	}
	return out
}

// hasEntry reports whether the FS has a file of the root directory: the
// function tracer's files where it has functions,
// available_filter_functions_addrs from 6.12 on.
func (f *FS) hasEntry(k nodeKind) bool {
	switch k {
	case nAvailableFuncs, nSetFtraceFilter, nSetFtraceNotrace, nSetFtracePid, nSetFtraceNotracePid:
		return f.hasFunctions()
	case nBufferSubbufKB:
		return f.texts.name == "6.12"
	case nAvailableFuncAddrs:
		return f.hasFunctions() && f.texts.name == "6.12"
	case nStackTrace, nStackMaxSize, nStackFilter:
		return f.hasStack()
	case nSetGraphFunction, nSetGraphNotrace, nMaxGraphDepth:
		return f.hasFunctions() && f.parent == nil
	}
	return true
}

// instanceDir is the name of the directory holding the instances.
const instanceDir = "instances"

// route finds the FS that serves a path: an instance's for a path below
// instances/NAME/ (rest is the path within it), else f itself.
func (f *FS) route(name string) (sub *FS, rest string, err error) {
	parts := clean(name)
	if f.parent != nil || len(parts) < 3 || parts[0] != instanceDir {
		return f, name, nil
	}
	in := f.instance(parts[1])
	if in == nil {
		return nil, "", syscall.ENOENT
	}
	return in.fs, strings.Join(parts[2:], "/"), nil
}

// instance returns the instance called name, or nil.
func (f *FS) instance(name string) *instance {
	f.instMu.Lock()
	defer f.instMu.Unlock()
	return f.instances[name]
}

// instanceNames lists the instances.
func (f *FS) instanceNames() []string {
	f.instMu.Lock()
	defer f.instMu.Unlock()
	out := make([]string, 0, len(f.instances))
	for n := range f.instances {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// eachInstance calls fn with every instance's FS.
func (f *FS) eachInstance(fn func(*FS)) {
	for _, n := range f.instanceNames() {
		if in := f.instance(n); in != nil {
			fn(in.fs)
		}
	}
}

// Mkdir is mkdir(2) of name (relative to the tracefs root). Only
// instances/NAME can be made, a new tracing instance; a name that exists
// fails with EEXIST, a directory elsewhere with EPERM (tracefs has no
// mkdir there), a missing parent with ENOENT. Errors are *fs.PathError
// holding a syscall.Errno.
func (f *FS) Mkdir(name string) error {
	sub, rest, err := f.route(name)
	if err != nil {
		return pathErr("mkdir", name, err)
	}
	if sub != f {
		return sub.Mkdir(rest)
	}
	parts := clean(name)
	if _, err := f.resolve(name); err == nil {
		return pathErr("mkdir", name, syscall.EEXIST)
	}
	if len(parts) == 0 {
		return pathErr("mkdir", name, syscall.EEXIST)
	}
	parent, err := f.resolve(strings.Join(parts[:len(parts)-1], "/"))
	switch {
	case err != nil:
		return pathErr("mkdir", name, err)
	case !parent.isDir():
		return pathErr("mkdir", name, syscall.ENOTDIR)
	case parent.kind != nInstances:
		return pathErr("mkdir", name, syscall.EPERM)
	}
	if err := f.newInstance(parts[1]); err != nil {
		return pathErr("mkdir", name, err)
	}
	return nil
}

// newInstance makes the instance called name.
func (f *FS) newInstance(name string) error {
	maker := f.made.Instance
	if maker == nil {
		rb, ok := f.b.(*RegistryBackend)
		if !ok {
			return syscall.EPERM
		}
		maker = func() (Backend, func(*FS), func(), error) {
			view := rb.R.Instance()
			return NewRegistryBackend(view), nil, view.Close, nil
		}
	}
	f.instMu.Lock()
	defer f.instMu.Unlock()
	if f.instances[name] != nil {
		return syscall.EEXIST
	}
	b, bind, release, err := maker()
	if err != nil {
		return errnoOf(err)
	}
	opts := f.made
	opts.Mount.Mode = nil
	parentStatics := f.statics
	opts.Static = func() []StaticEvent { return parentStatics().list }
	child := New(b, opts)
	child.parent = f
	child.rootPerm = instanceDirMode
	child.opts = instanceOptions(f.texts.name)
	child.optOn = make([]bool, len(child.opts))
	for i, o := range child.opts {
		child.optOn[i] = o.instanceDefault()
	}
	// On 6.1 whether the buffers have grown to their default size is one
	// flag for every instance; on 6.12 an instance starts grown.
	child.bufPages = bufPages(traceBufSize)
	child.expanded = true
	if f.texts.name != "6.12" {
		f.mu.Lock()
		child.expanded = f.expanded
		f.mu.Unlock()
	}
	child.ring.limit = child.ringLimit()
	if bind != nil {
		bind(child)
	}
	if f.instances == nil {
		f.instances = map[string]*instance{}
	}
	f.instances[name] = &instance{fs: child, release: release}
	return nil
}

// Rmdir is rmdir(2) of name. Only an instance's directory can go: its
// events are disabled and its triggers removed first, as the kernel's
// instance removal does; an instance with a file open fails with EBUSY.
// Any other existing directory fails with EPERM, a file with ENOTDIR.
func (f *FS) Rmdir(name string) error {
	sub, rest, err := f.route(name)
	if err != nil {
		return pathErr("rmdir", name, err)
	}
	if sub != f {
		return sub.Rmdir(rest)
	}
	n, err := f.resolve(name)
	switch {
	case err != nil:
		return pathErr("rmdir", name, err)
	case !n.isDir():
		return pathErr("rmdir", name, syscall.ENOTDIR)
	case n.kind != nInstance:
		return pathErr("rmdir", name, syscall.EPERM)
	}
	f.instMu.Lock()
	in := f.instances[n.base]
	if in == nil {
		f.instMu.Unlock()
		return pathErr("rmdir", name, syscall.ENOENT)
	}
	if in.fs.openFiles.Load() > 0 {
		f.instMu.Unlock()
		return pathErr("rmdir", name, syscall.EBUSY)
	}
	delete(f.instances, n.base)
	f.instMu.Unlock()
	in.fs.teardown()
	if in.release != nil {
		in.release()
	}
	return nil
}

// teardown empties an instance that goes: every trigger removed, every
// event disabled, readers woken.
func (f *FS) teardown() {
	f.mu.Lock()
	lists := f.triggers
	f.triggers = map[eventKey]*trigger.List{}
	f.mu.Unlock()
	if hb, ok := f.b.(HistBackend); ok {
		for k := range lists {
			_ = hb.SetTriggers(k.group, k.name, &trigger.List{})
		}
	}
	f.syncSoft()
	f.clearEvents()
	f.Shutdown()
}

// instanceDirMode is instances/ and each instance's directory (0750).
const instanceDirMode fs.FileMode = 0o750

// RemoveInstances removes every instance, open files or not, as a front
// end that is going away must (an unmounted tree's files are gone).
func (f *FS) RemoveInstances() {
	for _, name := range f.instanceNames() {
		f.instMu.Lock()
		in := f.instances[name]
		delete(f.instances, name)
		f.instMu.Unlock()
		if in == nil {
			continue
		}
		in.fs.teardown()
		if in.release != nil {
			in.release()
		}
	}
}
