package tracefs

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
)

// The stack tracer (kernel/trace/trace_stack.c) records the deepest
// kernel stack seen at the entry of the functions stack_trace_filter
// selects (all when empty). It has three files at the top level of
// tracefs: stack_trace (the deepest stack, a frame per line with its
// depth and size), stack_max_size (that depth in bytes, writable, for a
// new measurement) and stack_trace_filter (an ftrace_regex file like
// set_ftrace_filter). It is switched on and off by the kernel's sysctl
// /proc/sys/kernel/stack_tracer_enabled, which is no file of tracefs: a
// tracefs that the kernel does not serve cannot see the switch, so with a
// live backend the three files are the running kernel's own (KernelStack)
// and the kernel's tracer does the recording; emulated, they are kept by
// the FS (EmulatedStack) and no stack is ever recorded.

// StackTracer gives an FS the stack tracer's files.
type StackTracer interface {
	// OpenStack opens one of the stack tracer's files by name
	// (stack_trace, stack_max_size, stack_trace_filter) with os.O_*
	// flags. A read gives the file's text, a write is one write(2),
	// and the close ends the open as the kernel's release does.
	OpenStack(name string, flag int) (io.ReadWriteCloser, error)
}

// KernelStack is the running kernel's stack tracer, whose files are in
// the tracefs mounted at Dir.
type KernelStack struct{ Dir string }

// OpenStack opens the kernel's file.
func (k KernelStack) OpenStack(name string, flag int) (io.ReadWriteCloser, error) {
	return os.OpenFile(filepath.Join(k.Dir, name), flag&^syscall.O_CREAT, 0)
}

// HasKernelStack reports whether the tracefs mounted at dir has the
// stack tracer's files (the kernel was built with CONFIG_STACK_TRACER).
func HasKernelStack(dir string) bool {
	if dir == "" {
		return false
	}
	_, err := os.Stat(filepath.Join(dir, "stack_trace"))
	return err == nil
}

// EmulatedStack is a stack tracer the FS keeps itself: stack_max_size
// and stack_trace_filter take and show what the kernel's would, and
// stack_trace shows a tracer that has recorded nothing.
func EmulatedStack() StackTracer { return emulatedStack{} }

type emulatedStack struct{}

// OpenStack is never called: the FS serves an emulated stack tracer's
// files itself.
func (emulatedStack) OpenStack(string, int) (io.ReadWriteCloser, error) {
	return nil, syscall.ENODEV
}

// stackState is the emulated stack tracer's stack_max_size (its
// stack_trace_filter is funcState.stack).
type stackState struct {
	mu  sync.Mutex
	max uint64
}

// stackFileNames are the stack tracer's files, by node.
var stackFileNames = map[nodeKind]string{
	nStackTrace:   "stack_trace",
	nStackMaxSize: "stack_max_size",
	nStackFilter:  "stack_trace_filter",
}

// hasStack reports whether the FS has the stack tracer's files: at the
// top level, with a stack tracer and the function tracer it runs on.
func (f *FS) hasStack() bool {
	return f.parent == nil && f.made.StackTracer != nil && f.hasFunctions()
}

// kernelStack is the stack tracer whose files the FS passes on (nil when
// it keeps them itself).
func (f *FS) kernelStack() StackTracer {
	if _, ok := f.made.StackTracer.(emulatedStack); ok {
		return nil
	}
	return f.made.StackTracer
}

// openStack opens the kernel's file behind a stack tracer node, for the
// handle's life.
func (f *FS) openStack(h *File) error {
	st := f.kernelStack()
	if st == nil {
		if list, ok := funcLists[h.n.kind]; ok && canWrite(h.flag) {
			h.rx = f.openFuncRegex(list, h.flag&syscall.O_TRUNC != 0)
		}
		return nil
	}
	rw, err := st.OpenStack(stackFileNames[h.n.kind], h.flag)
	if err != nil {
		return errnoOr(err, syscall.EIO)
	}
	h.ext = rw
	return nil
}

// readExt reads all of a kernel file passed on.
func readExt(r io.Reader) ([]byte, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, errnoOr(err, syscall.EIO)
	}
	return b, nil
}

// writeExt is one write(2) to the kernel file the handle passes on,
// opened again (without O_TRUNC) if Commit closed it (h.mu held).
func (h *File) writeExt(p []byte) (int, error) {
	if h.ext == nil {
		rw, err := h.fs.kernelStack().OpenStack(stackFileNames[h.n.kind], h.flag&^syscall.O_TRUNC)
		if err != nil {
			return 0, errnoOr(err, syscall.EIO)
		}
		h.ext, h.extDone = rw, false
	}
	n, err := h.ext.Write(p)
	if err != nil {
		return n, errnoOr(err, syscall.EIO)
	}
	return n, nil
}

// isExtEdit reports whether the handle edits the kernel's
// stack_trace_filter (h.mu held).
func (h *File) isExtEdit() bool {
	return (h.ext != nil || h.extDone) && h.n.kind == nStackFilter && canWrite(h.flag)
}

// truncateExt opens the kernel's stack_trace_filter again with O_TRUNC,
// for a truncation that came after the open (a FUSE client's), so that
// the kernel's edit starts from an empty selection (h.mu held).
func (h *File) truncateExt() error {
	if h.ext != nil {
		h.ext.Close()
		h.ext = nil
	}
	rw, err := h.fs.kernelStack().OpenStack(stackFileNames[h.n.kind], h.flag|syscall.O_TRUNC)
	if err != nil {
		h.extDone = true
		return errnoOr(err, syscall.EIO)
	}
	h.ext, h.extDone = rw, false
	return nil
}

// commitExt closes the kernel's stack_trace_filter, whose release puts
// the edit in place (h.mu held).
func (h *File) commitExt() {
	if h.ext != nil {
		h.ext.Close()
		h.ext = nil
	}
	h.extDone = true
}

// errnoOr is the errno err carries, else def.
func errnoOr(err error, def syscall.Errno) syscall.Errno {
	var e syscall.Errno
	if errors.As(err, &e) {
		return e
	}
	return def
}

// stackTraceText is the emulated stack_trace: the table's heading with no
// entries, and while the maximum is 0 the note that the tracer is off
// (the kernel's shows it when the tracer is disabled and has measured
// nothing; an emulated tracer is never enabled).
func (f *FS) stackTraceText() string {
	s := "        Depth    Size   Location    (0 entries)\n" +
		"        -----    ----   --------\n"
	f.stack.mu.Lock()
	max := f.stack.max
	f.stack.mu.Unlock()
	if max == 0 {
		s += "#\n" +
			"#  Stack tracer disabled\n" +
			"#\n" +
			"# To enable the stack tracer, either add 'stacktrace' to the\n" +
			"# kernel command line\n" +
			"# or 'echo 1 > /proc/sys/kernel/stack_tracer_enabled'\n" +
			"#\n"
	}
	return s
}

// stackMaxText is the emulated stack_max_size.
func (f *FS) stackMaxText() string {
	f.stack.mu.Lock()
	defer f.stack.mu.Unlock()
	// The kernel prints the unsigned maximum as a long.
	return strconv.FormatInt(int64(f.stack.max), 10) + "\n"
}

// writeStackMax is a write to the emulated stack_max_size: a decimal
// number as kstrtoul_from_user reads it.
func (f *FS) writeStackMax(p []byte) (int, error) {
	v, err := parseUlong(p)
	if err != nil {
		return 0, err
	}
	f.stack.mu.Lock()
	f.stack.max = v
	f.stack.mu.Unlock()
	return len(p), nil
}
