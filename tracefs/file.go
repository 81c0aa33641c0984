package tracefs

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/ktrace-dev/ktrace/grammar"
)

// File is an open tracefs file. Reads see the file's content as of the
// first Read (the kernel's seq_file generates it on read; taking it once
// keeps a partial read consistent). Each Write is one write(2).
type File struct {
	fs   *FS
	n    node
	path string
	flag int

	mu     sync.Mutex
	buf    []byte
	loaded bool
	off    int64
	closed bool
	// pauses: a reader of trace that stops recording until it is closed
	// (options/pause-on-trace, as the kernel's tracing_open does).
	pauses bool
	// shut is closed without h.mu, which a blocked trace_pipe read does
	// not hold.
	shut atomic.Bool
	// pipe is trace_pipe text consumed from the ring but not yet read.
	pipe []byte
	// pid is the process writing through the handle (SetCaller), whose
	// task a trace_marker entry names.
	pid int
	// rx is the edit of set_ftrace_filter or set_ftrace_notrace an open
	// for writing makes, put in place at the close.
	rx *funcRegex
	// ext is the kernel's own file a stack tracer file passes on
	// (KernelStack), open as long as the handle; an edit of
	// stack_trace_filter put in place by Commit closed it (extDone),
	// and a later write opens it again.
	ext     io.ReadWriteCloser
	extDone bool
	// wrote is set by a write to an edit (rx, or ext's
	// stack_trace_filter) since the open or the last Commit.
	wrote bool
	// lastRead and lastAct are a hist file's hit counts as of its last
	// read, and as of its open, last read or last poll (Poll).
	lastRead, lastAct uint64
	// seqIdx and seqPend are a trigger file's seq_file state
	// (readSeq): the triggers shown so far, and the text of those not
	// yet read.
	seqIdx  int
	seqPend []byte
}

// SetCaller names the process that uses the handle (a FUSE request's
// caller); the default is ktrace's own process. A trace_marker write is
// recorded as that process's.
func (h *File) SetCaller(pid int) {
	h.mu.Lock()
	h.pid = pid
	h.mu.Unlock()
}

func accMode(flag int) int { return flag & (syscall.O_RDONLY | syscall.O_WRONLY | syscall.O_RDWR) }

func canWrite(flag int) bool { a := accMode(flag); return a == syscall.O_WRONLY || a == syscall.O_RDWR }
func canRead(flag int) bool  { a := accMode(flag); return a == syscall.O_RDONLY || a == syscall.O_RDWR }

// Open opens the file at name (relative to the tracefs root) with os.O_*
// flags. As in the kernel, opening kprobe_events or dynamic_events for
// writing with O_TRUNC removes every event in that file's scope first and
// fails with EBUSY (removing nothing) if one of them is enabled; a
// truncating open of error_log clears it; of trace, clears the ring
// buffer. tracefs files cannot be created: O_CREAT on a missing name in an
// existing directory fails with EACCES. Errors are *fs.PathError holding a syscall.Errno.
func (f *FS) Open(name string, flag int) (*File, error) {
	if sub, rest, err := f.route(name); err != nil {
		return nil, pathErr("open", name, err)
	} else if sub != f {
		return sub.Open(rest, flag)
	}
	n, err := f.resolve(name)
	if err != nil {
		if errors.Is(err, syscall.ENOENT) && flag&syscall.O_CREAT != 0 {
			if parent, perr := f.resolve(path.Dir(path.Clean("/" + name))); perr == nil && parent.isDir() {
				err = syscall.EACCES
			}
		}
		return nil, pathErr("open", name, err)
	}
	if n.isDir() && canWrite(flag) {
		return nil, pathErr("open", name, syscall.EISDIR)
	}
	if canWrite(flag) && flag&syscall.O_TRUNC != 0 {
		switch n.kind {
		case nKprobeEvents, nDynamicEvents, nSyntheticEvents, nUprobeEvents:
			if err := f.b.Truncate(controlFile(n.kind)); err != nil {
				return nil, pathErr("open", name, grammar.ErrnoOf(err))
			}
			f.pruneFilters()
		case nEvTrigger:
			f.clearTriggers(n)
		case nErrorLog:
			f.ClearErrorLog()
		case nTrace:
			f.clearTrace()
		case nSetEvent:
			f.clearEvents()
		case nSetEventPid, nSetEventNotracePid:
			f.mu.Lock()
			if n.kind == nSetEventPid {
				clear(f.eventPids)
			} else {
				clear(f.eventNoPids)
			}
			f.mu.Unlock()
		case nSetFtracePid, nSetFtraceNotracePid:
			f.clearFuncPids(n.kind == nSetFtraceNotracePid)
		}
	}
	h := &File{fs: f, n: n, path: name, flag: flag, pid: syscall.Getpid()}
	f.openFiles.Add(1)
	list, isList := funcLists[n.kind]
	switch {
	case n.kind == nStackTrace || n.kind == nStackMaxSize || n.kind == nStackFilter:
		if err := f.openStack(h); err != nil {
			f.openFiles.Add(-1)
			return nil, pathErr("open", name, err)
		}
	case isList && canWrite(flag):
		h.rx = f.openFuncRegex(list, flag&syscall.O_TRUNC != 0)
	case n.kind == nTracePipe:
		f.mu.Lock()
		f.pipeReaders++
		f.mu.Unlock()
	case n.kind == nEvHist && f.texts.histPoll:
		h.lastAct = f.histHits(n)
	}
	if n.kind == nTrace && flag&syscall.O_ACCMODE != syscall.O_WRONLY && f.optionOn("pause-on-trace") {
		// What was traced before the open is in the kernel's buffer when
		// tracing_open stops recording: the backend passes on what it
		// holds first.
		f.sync()
		f.mu.Lock()
		f.pausers++
		f.mu.Unlock()
		h.pauses = true
	}
	return h, nil
}

func controlFile(k nodeKind) ControlFile {
	switch k {
	case nKprobeEvents:
		return KprobeEvents
	case nSyntheticEvents:
		return SyntheticEvents
	case nUprobeEvents:
		return UprobeEvents
	}
	return DynamicEvents
}

// ReadFile returns the whole content of a tracefs file.
func (f *FS) ReadFile(name string) ([]byte, error) {
	h, err := f.Open(name, syscall.O_RDONLY)
	if err != nil {
		return nil, err
	}
	defer h.Close()
	return io.ReadAll(h)
}

// Name returns the path the file was opened with.
func (h *File) Name() string { return h.path }

// Stat describes the open file.
func (h *File) Stat() (fs.FileInfo, error) {
	return h.fs.info(h.n.base, h.n.kind, h.n.mode), nil
}

// Read reads the file's content. A trace_pipe read consumes the ring's
// entries; on an empty ring it waits while events are enabled if the FS
// was made with PipeBlocks, else it ends at once.
func (h *File) Read(p []byte) (int, error) {
	return h.ReadContext(context.Background(), p)
}

// ReadContext is Read with a context that ends a waiting trace_pipe read:
// it then fails with EINTR, as a read(2) interrupted by a signal does. An
// open with O_NONBLOCK makes that read fail with EAGAIN instead of waiting.
func (h *File) ReadContext(ctx context.Context, p []byte) (int, error) {
	if h.n.kind == nTracePipe {
		return h.readPipe(ctx, p)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return 0, syscall.EBADF
	}
	if h.n.isDir() {
		return 0, syscall.EISDIR
	}
	if !canRead(h.flag) {
		return 0, syscall.EBADF
	}
	if h.n.kind == nEvTrigger && h.ext == nil {
		return h.readSeq(p)
	}
	if !h.loaded && h.ext != nil {
		b, err := readExt(h.ext)
		if err != nil {
			return 0, err
		}
		h.buf, h.loaded = b, true
	}
	if !h.loaded {
		h.buf = []byte(h.fs.content(h.n))
		h.loaded = true
		if h.n.kind == nEvHist && h.fs.texts.histPoll {
			h.lastRead = h.fs.histHits(h.n)
			h.lastAct = h.lastRead
		}
	}
	if h.off >= int64(len(h.buf)) {
		return 0, io.EOF
	}
	if h.off > 0 && (h.n.kind == nEvFilter || h.n.kind == nGroupFilter) {
		// The kernel's filter files answer only a read at offset 0: a
		// reader with a buffer shorter than the text gets its first part.
		return 0, io.EOF
	}
	n := copy(p, h.buf[h.off:])
	h.off += int64(n)
	return n, nil
}

// readSeq is a read(2) of a trigger file, one seq_read_iter of the
// kernel's seq_file over the event's trigger list: the text of the
// triggers already shown is read first; once it is all read (even when
// that filled p), the list as it is now is shown from the next trigger
// on, as many as fill p (at least one). A reader that removes triggers
// between its reads therefore misses some: busybox's `while read`, reading
// a byte at a time, skips every other one after the first two, as on
// the kernel (seen on 6.1 and 6.12).
func (h *File) readSeq(p []byte) (int, error) {
	copied := 0
	if len(h.seqPend) > 0 {
		copied = copy(p, h.seqPend)
		h.seqPend = h.seqPend[copied:]
		if len(h.seqPend) > 0 {
			h.off += int64(copied)
			return copied, nil
		}
	}
	// The records: one line per trigger; an empty list shows the
	// available triggers, as one record at position 0 only.
	text := h.fs.content(h.n)
	var recs []string
	if strings.HasPrefix(text, "#") {
		recs = []string{text}
	} else {
		recs = strings.SplitAfter(text, "\n")
		if recs[len(recs)-1] == "" {
			recs = recs[:len(recs)-1]
		}
	}
	if h.seqIdx < len(recs) {
		h.seqPend = append(h.seqPend[:0], recs[h.seqIdx]...)
		h.seqIdx++
		for h.seqIdx < len(recs) && len(h.seqPend) < len(p)-copied {
			h.seqPend = append(h.seqPend, recs[h.seqIdx]...)
			h.seqIdx++
		}
		n := copy(p[copied:], h.seqPend)
		h.seqPend = h.seqPend[n:]
		copied += n
	}
	h.off += int64(copied)
	if copied == 0 && len(p) > 0 {
		return 0, io.EOF
	}
	return copied, nil
}

// readPipe is a trace_pipe read. It does not hold h.mu while waiting, so
// Close can end the wait.
func (h *File) readPipe(ctx context.Context, p []byte) (int, error) {
	if h.shut.Load() {
		return 0, syscall.EBADF
	}
	if !canRead(h.flag) {
		return 0, syscall.EBADF
	}
	h.mu.Lock()
	pending := len(h.pipe) > 0
	h.mu.Unlock()
	if !pending {
		text, err := h.fs.pipeRead(ctx, h.flag&syscall.O_NONBLOCK != 0, h.shut.Load)
		if err != nil {
			return 0, err
		}
		if text == "" {
			return 0, io.EOF
		}
		h.mu.Lock()
		h.pipe = append(h.pipe, text...)
		h.mu.Unlock()
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	n := copy(p, h.pipe)
	h.pipe = h.pipe[n:]
	return n, nil
}

// Seek sets the read offset (whence as in io.Seeker). Seeking back to 0
// makes the next Read regenerate the content, like a seq_file.
func (h *File) Seek(offset int64, whence int) (int64, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return 0, syscall.EBADF
	}
	var abs int64
	switch whence {
	case io.SeekStart:
		abs = offset
	case io.SeekCurrent:
		abs = h.off + offset
	case io.SeekEnd:
		if !h.loaded {
			h.buf = []byte(h.fs.content(h.n))
			h.loaded = true
		}
		abs = int64(len(h.buf)) + offset
	default:
		return 0, syscall.EINVAL
	}
	if abs < 0 {
		return 0, syscall.EINVAL
	}
	if abs == 0 {
		h.loaded = false
		h.seqIdx, h.seqPend = 0, nil
		if sk, ok := h.ext.(io.Seeker); ok {
			if _, err := sk.Seek(0, io.SeekStart); err != nil {
				return 0, errnoOr(err, syscall.EIO)
			}
		}
	}
	h.off = abs
	return abs, nil
}

// Write is one write(2). Errors are syscall.Errno; a rejected probe
// definition is also recorded in error_log when the kernel records it.
func (h *File) Write(p []byte) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return 0, syscall.EBADF
	}
	if !canWrite(h.flag) {
		return 0, syscall.EBADF
	}
	if h.n.kind == nTraceMarker {
		return h.fs.writeMarker(h.pid, p)
	}
	if h.rx != nil {
		h.wrote = true
		return h.fs.writeFuncRegex(h.rx, p)
	}
	if h.ext != nil || h.extDone {
		h.wrote = true
		return h.writeExt(p)
	}
	return h.fs.write(h.n, p)
}

// TruncateEdit empties the selection an open of set_ftrace_filter or
// set_ftrace_notrace for writing edits, as if it had been opened with
// O_TRUNC (a FUSE client truncates after the open), and reports whether
// the handle has such an edit.
func (h *File) TruncateEdit() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.isExtEdit() {
		return h.truncateExt() == nil
	}
	if h.rx == nil {
		return false
	}
	h.rx.funcSelection = funcSelection{set: map[int]bool{}}
	h.rx.dirty = true
	return true
}

// Commit puts an edit of set_ftrace_filter or set_ftrace_notrace in place
// now, as its close will (a FUSE close(2) returns at FLUSH, before the
// handle is released); the handle stays open for more writes. An edit
// that has had no write since the open or the last Commit is left for
// later: a shell's `echo WORD > FILE` closes its first descriptor of the
// file (a FLUSH) after dup2 and before it writes, and putting the
// truncated edit in place there would select every function for a
// moment, where the kernel goes from the old selection straight to WORD.
func (h *File) Commit() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.wrote {
		return
	}
	h.wrote = false
	if h.rx != nil && !h.closed {
		h.fs.commitFuncRegex(h.rx)
	}
	if h.isExtEdit() && !h.closed {
		h.commitExt()
	}
}

// Edits reports whether the handle edits a function selection (an open
// of set_ftrace_filter or set_ftrace_notrace for writing).
func (h *File) Edits() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.rx != nil || h.isExtEdit()
}

// WriteFull writes p as a shell's write loop does (busybox's
// full_write): write(2) again with the rest after a short write, until
// all is written or one fails. A file that takes one word per write(2)
// (set_ftrace_filter) gets each word in turn.
func (h *File) WriteFull(p []byte) (int, error) {
	total := 0
	for len(p) > 0 {
		n, err := h.Write(p)
		total += n
		if err != nil {
			return total, err
		}
		if n <= 0 {
			return total, io.ErrShortWrite
		}
		p = p[n:]
	}
	return total, nil
}

// Close releases the handle.
func (h *File) Close() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return syscall.EBADF
	}
	h.closed = true
	h.fs.openFiles.Add(-1)
	h.buf = nil
	if h.pauses {
		h.fs.mu.Lock()
		h.fs.pausers--
		h.fs.mu.Unlock()
	}
	if h.n.kind == nTracePipe {
		h.fs.mu.Lock()
		h.fs.pipeReaders--
		h.fs.mu.Unlock()
		h.shut.Store(true)
		h.fs.wake()
	}
	if h.rx != nil {
		h.fs.commitFuncRegex(h.rx)
		h.rx = nil
	}
	if h.ext != nil {
		err := h.ext.Close()
		h.ext = nil
		if err != nil {
			return errnoOr(err, syscall.EIO)
		}
	}
	return nil
}

// pruneFilters forgets the filters of events that no longer exist, in
// the FS and its instances.
func (f *FS) pruneFilters() {
	f.eachInstance((*FS).pruneFilters)
	f.mu.Lock()
	none := len(f.filters) == 0 && len(f.triggers) == 0 && len(f.wasEnabled) == 0
	f.mu.Unlock()
	if none {
		return
	}
	live := map[eventKey]bool{}
	serials := map[uint64]bool{}
	for _, e := range f.triggerEvents() {
		live[eventKey{e.Group, e.Name, e.ID}] = true
		serials[e.Serial] = true
	}
	f.mu.Lock()
	removed := false
	for s := range f.wasEnabled {
		if !serials[s] {
			delete(f.wasEnabled, s)
			removed = true
		}
	}
	f.mu.Unlock()
	if removed {
		f.clearRemoved()
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for k := range f.filters {
		if !live[k] {
			delete(f.filters, k)
		}
	}
	for k := range f.triggers {
		if !live[k] {
			delete(f.triggers, k)
		}
	}
}

// write dispatches one write(2) by file.
func (f *FS) write(n node, p []byte) (int, error) {
	switch n.kind {
	case nKprobeEvents, nDynamicEvents, nSyntheticEvents, nUprobeEvents:
		w, err := f.b.Write(controlFile(n.kind), p)
		// A removal (even in a write that fails later) frees its events'
		// filters, which must not reappear on an event that reuses the
		// name and ID.
		f.pruneFilters()
		if err != nil {
			var we *WriteError
			if errors.As(err, &we) {
				f.logErrors(we.Logs)
				// The write fails with the registry's error itself: its
				// errno, and the entries it logged for callers that
				// report them.
				return w, we
			}
			return w, grammar.ErrnoOf(err)
		}
		return w, nil
	case nErrorLog:
		// The kernel accepts and ignores anything written to error_log;
		// only a truncating open clears it.
		return len(p), nil
	case nTrace:
		// The kernel accepts and ignores the data; the truncating open of
		// `echo > trace` is what clears the ring.
		return len(p), nil
	case nSnapshot:
		return f.writeSnapshot(p)
	case nTracingOn:
		v, err := parseUlong(p)
		if err != nil {
			return 0, err
		}
		// Hits from before the write are recorded or not by the old
		// setting.
		f.sync()
		if v != 0 && !f.tracingOnNow() && f.tracerName() == tracerFunction {
			// Turning tracing on starts the function tracer again
			// (its start resets the buffer).
			f.clearTrace()
		}
		if tb, ok := f.b.(TracingBackend); ok {
			if err := tb.SetTracingOn(v != 0); err != nil {
				return 0, err
			}
		}
		f.mu.Lock()
		f.tracingOn = v != 0
		f.mu.Unlock()
		return len(p), nil
	case nEventsEnable, nGroupEnable, nEvEnable:
		v, err := parseUlong(p)
		if err != nil {
			return 0, err
		}
		if v != 0 && v != 1 {
			return 0, syscall.EINVAL
		}
		err = f.setEnabled(n, v == 1)
		f.wake()
		if err != nil {
			return 0, grammar.ErrnoOf(err)
		}
		return len(p), nil
	case nEvFilter, nGroupFilter:
		return f.writeFilter(n, p)
	case nEvTrigger:
		return f.writeTrigger(n, p)
	case nCurrentTracer:
		return f.writeCurrentTracer(p)
	case nSetEvent:
		return f.writeSetEvent(p)
	case nSetEventPid, nSetEventNotracePid:
		return f.writePidList(n.kind == nSetEventNotracePid, p)
	case nSetFtracePid, nSetFtraceNotracePid:
		return f.writeFuncPids(n.kind == nSetFtraceNotracePid, p)
	case nBufferSizeKB:
		return f.writeBufferSize(p)
	case nTraceClock:
		return f.writeTraceClock(p)
	case nTracingCpumask:
		return f.writeCPUMask(p)
	case nStackMaxSize:
		return f.writeStackMax(p)
	case nMaxGraphDepth:
		return f.writeMaxGraphDepth(p)
	case nBufferSubbufKB:
		return f.writeSubbuf(p)
	case nTraceOptions:
		return f.writeTraceOptions(p)
	case nOption:
		return f.writeOptionFile(n.base, p)
	}
	// Files without a write method (README, format, id, ...): the VFS
	// answers EINVAL even to root, and so does a write to trigger, since
	// ktrace has no trigger engine.
	return 0, syscall.EINVAL
}

// setEnabled applies an enable write to one event, a group or all events.
// Like the kernel's __ftrace_set_clr_event, a group or global write goes on
// past an event that fails and returns the first error: the others stay
// enabled.
func (f *FS) setEnabled(n node, on bool) error {
	if n.kind == nEvEnable {
		e, ok := f.findEventAny(f.b.Events(), n.group, n.event)
		if !ok {
			return syscall.ENOENT
		}
		return f.setOne(e, on)
	}
	var first error
	for _, e := range f.events() {
		if n.kind == nGroupEnable && e.Group != n.group {
			continue
		}
		if e.Enabled == on {
			continue
		}
		if err := f.setOne(e, on); err != nil && first == nil {
			first = fmt.Errorf("enable %s/%s: %w", e.Group, e.Name, err)
		}
	}
	return first
}

// setOne enables or disables one event, static or dynamic.
func (f *FS) setOne(e EventInfo, on bool) error {
	if e.Static {
		return f.setStaticEnabled(e.Group, e.Name, on)
	}
	if on {
		f.expand()
	}
	if err := f.b.SetEnabled(e.Group, e.Name, on); err != nil {
		return err
	}
	if on {
		f.markEnabled(e)
	}
	return nil
}

// markEnabled notes that probe event e was enabled (wasEnabled).
func (f *FS) markEnabled(e EventInfo) {
	if e.Static || e.Synthetic {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.wasEnabled == nil {
		f.wasEnabled = map[uint64]bool{}
	}
	f.wasEnabled[e.Serial] = true
}

// clearRemoved empties the trace and the snapshot buffer after the
// removal of a probe event that was enabled once (the kernel's
// clear_trace): what the backend holds is passed on first, so that none
// of it shows up after.
func (f *FS) clearRemoved() {
	f.sync()
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ring.clear()
	if f.snap != nil {
		f.snap.clear()
	}
}

// parseUlong parses a write the way kstrtoul_from_user(.., 10, ..) does:
// optional '+', decimal digits, one optional trailing newline, nothing
// else (no leading blanks, no 0x).
func parseUlong(p []byte) (uint64, error) {
	s := string(p)
	s = strings.TrimSuffix(s, "\n")
	s = strings.TrimPrefix(s, "+")
	if s == "" {
		return 0, syscall.EINVAL
	}
	var v uint64
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, syscall.EINVAL
		}
		d := uint64(c - '0')
		if v > (^uint64(0)-d)/10 {
			return 0, syscall.ERANGE
		}
		v = v*10 + d
	}
	return v, nil
}

// content generates a readable file's text.
func (f *FS) content(n node) string {
	switch n.kind {
	case nEventsEnable, nGroupEnable, nEvEnable, nEvTrigger, nEvHist, nSetEvent:
		// Triggers may have switched events, paused histograms and
		// used up counts where the events happen.
		if ts, ok := f.b.(TriggerStater); ok {
			f.setStaticStates(ts.SyncTriggerState())
		}
	}
	switch n.kind {
	case nReadme:
		return f.texts.readme
	case nKprobeEvents, nDynamicEvents, nSyntheticEvents, nUprobeEvents:
		return f.b.Readback(controlFile(n.kind))
	case nErrorLog:
		return f.errorLogText()
	case nKprobeProfile:
		return f.profileText()
	case nUprobeProfile:
		return f.uprobeProfileText()
	case nTrace:
		return f.traceText()
	case nSnapshot:
		return f.snapshotText()
	case nTracePipe:
		return ""
	case nTracingCpumask:
		return f.cpumaskText()
	case nTracingOn:
		// A snapshot trigger that found no spare buffer stopped
		// tracing (applied when the records are taken).
		f.sync()
		if f.tracingOnNow() {
			return "1\n"
		}
		return "0\n"
	case nHeaderEvent:
		return f.texts.headerEvent
	case nHeaderPage:
		return f.headerPageText()
	case nBufferSubbufKB:
		return f.subbufText()
	case nEventsEnable, nGroupEnable:
		return f.enableText(n)
	case nGroupFilter:
		return groupFilterHead
	case nAvailableEvents:
		return f.availableEventsText()
	case nAvailableTracers:
		return strings.Join(f.availableTracers(), " ") + "\n"
	case nCurrentTracer:
		return f.tracerName() + "\n"
	case nAvailableFuncs, nAvailableFuncAddrs:
		return f.availableFunctionsText(n.kind == nAvailableFuncAddrs)
	case nSetFtraceFilter, nSetFtraceNotrace, nStackFilter, nSetGraphFunction, nSetGraphNotrace:
		return f.funcFilterText(funcLists[n.kind])
	case nMaxGraphDepth:
		return f.maxGraphDepthText()
	case nStackTrace:
		return f.stackTraceText()
	case nStackMaxSize:
		return f.stackMaxText()
	case nSetFtracePid, nSetFtraceNotracePid:
		return f.funcPidText(n.kind == nSetFtraceNotracePid)
	case nBufferSizeKB, nBufferTotalKB:
		return f.bufferSizeText(n.kind == nBufferTotalKB)
	case nSetEvent:
		return f.setEventText()
	case nSetEventPid, nSetEventNotracePid:
		f.mu.Lock()
		defer f.mu.Unlock()
		if n.kind == nSetEventPid {
			return pidListText(f.eventPids)
		}
		return pidListText(f.eventNoPids)
	case nTraceClock:
		return f.traceClockText()
	case nTraceOptions:
		return f.traceOptionsText()
	case nOption:
		if f.optionOn(n.base) {
			return "1\n"
		}
		return "0\n"
	}
	e, ok := f.findEventAny(f.b.Events(), n.group, n.event)
	if !ok {
		// The event went away after the open; the kernel answers ENODEV
		// then, a reader here sees an empty file.
		return ""
	}
	switch n.kind {
	case nEvEnable:
		mark := ""
		if f.softMode(e) {
			mark = "*"
		}
		if e.Enabled {
			return "1" + mark + "\n"
		}
		return "0" + mark + "\n"
	case nEvFilter:
		f.mu.Lock()
		defer f.mu.Unlock()
		if ef, ok := f.filters[eventKey{e.Group, e.Name, e.ID}]; ok {
			return ef.text
		}
		return "none\n"
	case nEvFormat:
		if e.Static {
			s := f.statics()
			return s.list[s.index[e.Group+"/"+e.Name]].Format
		}
		s, _ := f.b.Format(e.Group, e.Name)
		return s
	case nEvHist:
		return f.histText(e)
	case nEvID:
		return fmt.Sprintf("%d\n", e.ID)
	case nEvTrigger:
		return f.triggerList(e).Text()
	}
	return ""
}

// enableText is events/enable or events/GROUP/enable: "0" when every event
// is disabled, "1" when every one is enabled, "X" when mixed. With no
// events at all it reads "0", as on a real system whose other events are
// all off.
func (f *FS) enableText(n node) string {
	var on, off bool
	for _, e := range f.events() {
		if n.kind == nGroupEnable && e.Group != n.group {
			continue
		}
		if e.Enabled {
			on = true
		} else {
			off = true
		}
	}
	switch {
	case on && off:
		return "X\n"
	case on:
		return "1\n"
	}
	return "0\n"
}

// profileLine is one line of kprobe_profile or uprobe_profile, with the
// place of its probe point in the list of all probe points.
type profileLine struct {
	order int
	text  string
}

// profileLines sorts lines into the order of the probe points (the
// kernel walks its dynamic event list) and joins them.
func profileLines(lines []profileLine) string {
	slices.SortStableFunc(lines, func(a, b profileLine) int { return cmp.Compare(a.order, b.order) })
	var b strings.Builder
	for _, l := range lines {
		b.WriteString(l.text)
	}
	return b.String()
}

// pointOrder is the place of an event's i-th probe point: from the
// backend's Order, else after everything listed so far (n).
func pointOrder(e EventInfo, i, n int) int {
	if i < len(e.Order) {
		return e.Order[i]
	}
	return n
}

// uprobeProfileText is uprobe_profile: one line per uprobe probe point,
// the path as typed, the event name left-aligned in 44 columns and the
// hits right-aligned in 15. The kernel's count is the entry handler's,
// which runs for uretprobes too (misses are not shown).
func (f *FS) uprobeProfileText() string {
	var lines []profileLine
	for _, e := range f.b.Events() {
		for i, path := range e.UprobePaths {
			lines = append(lines, profileLine{pointOrder(e, i, 1<<30+len(lines)), fmt.Sprintf("  %s %-44s %15d\n", path, e.Name, e.Hits)})
		}
	}
	return profileLines(lines)
}

// profileText is kprobe_profile: one line per kprobe probe point (a
// multi-probe event appears once per probe), name left-aligned in 44
// columns, then hits and misses right-aligned in 15.
func (f *FS) profileText() string {
	var lines []profileLine
	for _, e := range f.b.Events() {
		if !e.Kprobe {
			continue
		}
		probes := e.Probes
		if probes < 1 {
			probes = 1
		}
		for i := 0; i < probes; i++ {
			lines = append(lines, profileLine{pointOrder(e, i, 1<<30+len(lines)), fmt.Sprintf("  %-44s %15d %15d\n", e.Name, e.Hits, e.Misses)})
		}
	}
	return profileLines(lines)
}
