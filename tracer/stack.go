package tracer

import (
	"fmt"
	"strings"

	"github.com/ktrace-dev/ktrace/trigger"
)

// Kernel stacks as BPF programs see them (bpf_get_task_stack), turned into
// the stacks the kernel's own tracer records for the same hit: for a
// stacktrace trigger's entry in the trace, and for a hist trigger's
// stacktrace key.

// Frame is one frame of a stack as the kernel's tracer shows it.
type Frame struct {
	PC         uint64
	Name       string // "" when no symbol covers pc
	Off, Size  uint64
	Module     string
	RenamedFor bool // the name is the kernel tracer's, not pc's
}

// Text is seq_print_ip_sym: the function, with +OFFSET/SIZE under the
// sym-offset option, or the address when no symbol covers it.
func (f Frame) Text(offset bool) string {
	if f.Name == "" {
		return fmt.Sprintf("0x%x", f.PC)
	}
	s := f.Name
	if offset && !f.RenamedFor {
		s += fmt.Sprintf("+0x%x/0x%x", f.Off, f.Size)
	}
	if f.Module != "" {
		s += " [" + f.Module + "]"
	}
	return s
}

// KernelFrames turns the stack a BPF program saw into the one the
// kernel's tracer shows for the same hit: the frames of the BPF program
// and of the perf path that ran it go, and the perf path's function
// becomes the tracer's (perf_trace_CLASS is trace_event_raw_event_CLASS,
// perf_syscall_enter is ftrace_syscall_enter, kprobe_perf_func is
// kprobe_trace_func, ...), which the kernel calls in its place.
func KernelFrames(pcs []uint64, syms trigger.Names) []Frame {
	fs, _ := kernelFrames(pcs, syms)
	return fs
}

// kernelFrames is KernelFrames, and whether it found the BPF machinery's
// frames to take off.
func kernelFrames(pcs []uint64, syms trigger.Names) ([]Frame, bool) {
	var fs []Frame
	for _, pc := range pcs {
		if pc == 0 {
			break
		}
		f := Frame{PC: pc}
		if syms != nil {
			if s, ok := syms.LookupAddr(pc); ok {
				f.Name, f.Module, f.Off, f.Size = s.Name, s.Module, pc-s.Addr, s.Size
			}
		}
		fs = append(fs, f)
	}
	// The last frame of the BPF machinery: everything up to it goes.
	cut := -1
	for i, f := range fs {
		switch baseName(f.Name) {
		case "trace_call_bpf", "perf_trace_run_bpf_submit", "perf_call_bpf_enter", "perf_call_bpf_exit":
			cut = i
		}
	}
	if cut < 0 {
		// A stack unwound from a static event's context; the iterator
		// its program put first (bpfcode.TracepointHist.Iterator) goes
		// when the unwinding found it too.
		if len(fs) > 1 && strings.HasPrefix(fs[0].Name, "__traceiter_") && fs[1].Name == fs[0].Name {
			fs = fs[1:]
		}
		return fs, false
	}
	fs = fs[cut+1:]
	if len(fs) == 0 {
		return fs, true
	}
	if tracer, ok := tracerFunc(baseName(fs[0].Name)); ok {
		fs[0] = Frame{PC: fs[0].PC, Name: tracer, RenamedFor: true}
		// The dispatcher calls the perf function last, a jump that
		// leaves no frame of its own; it calls the tracer's function
		// before, from a frame of its own.
		if d, ok := dispatcher[tracer]; ok && (len(fs) < 2 || fs[1].Name != d) {
			fs = append(fs[:1], append([]Frame{{Name: d, RenamedFor: true}}, fs[1:]...)...)
		}
	}
	return fs, true
}

// TracepointFrames is KernelFrames for a static event's stack taken in
// two parts (bpfcode.StackSplit): top, the task's stack as the program
// saw it, gives the tracer's function; rest, unwound from the registers
// the perf path saved, the frames from its caller on, which top's walk
// may have lost some of.
func TracepointFrames(top, rest []uint64, syms trigger.Names) []Frame {
	fs, cut := kernelFrames(top, syms)
	below, _ := kernelFrames(rest, syms)
	if len(below) > 0 && perfFunc(below[0]) {
		below = below[1:]
	}
	if !cut || len(fs) == 0 || len(below) == 0 {
		return fs
	}
	return append(fs[:1:1], below...)
}

// dispatcher is the function that calls each probe tracer's function,
// which the stack shows under it.
var dispatcher = map[string]string{
	"kprobe_trace_func":    "kprobe_dispatcher",
	"kretprobe_trace_func": "kretprobe_dispatcher",
}

// tracerFunc is the kernel tracer's function that runs where the perf
// path's function perf runs.
func tracerFunc(perf string) (string, bool) {
	switch {
	case strings.HasPrefix(perf, "perf_trace_"):
		return "trace_event_raw_event_" + strings.TrimPrefix(perf, "perf_trace_"), true
	case perf == "perf_syscall_enter":
		return "ftrace_syscall_enter", true
	case perf == "perf_syscall_exit":
		return "ftrace_syscall_exit", true
	case perf == "kprobe_perf_func":
		return "kprobe_trace_func", true
	case perf == "kretprobe_perf_func":
		return "kretprobe_trace_func", true
	case perf == "fentry_perf_func":
		return "fentry_trace_func", true
	case perf == "fexit_perf_func":
		return "fexit_trace_func", true
	}
	return "", false
}

// perfFunc reports whether f is a perf path's function that runs where
// the kernel's tracer runs one of its own (tracerFunc).
func perfFunc(f Frame) bool {
	_, ok := tracerFunc(baseName(f.Name))
	return ok
}

// baseName is a function's name without the suffix the compiler gives
// its copies (perf_call_bpf_enter.isra.0).
func baseName(name string) string {
	base, _, _ := strings.Cut(name, ".")
	return base
}

// HistStackDepth is how many frames a hist trigger's stacktrace key holds
// (HIST_STACKTRACE_DEPTH).
const HistStackDepth = 16

// histStackSkip is how many frames the kernel's stacktrace key leaves out
// of its tracer's stack as a stacktrace trigger shows it: the tracer's
// function and its caller (kprobe_trace_func and kprobe_dispatcher,
// ftrace_syscall_enter and syscall_trace_enter, ...). Measured alike on
// 6.1 and 6.12.
const histStackSkip = 2

// HistStackRaw is how many return addresses a program saves for a
// stacktrace key: the kernel's frames, the two it skips, and room for the
// BPF and perf frames above them, which HistStack takes off.
const HistStackRaw = 32

// HistStack is the stacktrace key the kernel's hist trigger makes for the
// hit whose program saw the stack pcs: the tracer's stack (KernelFrames)
// without its top frames, at most HistStackDepth of them.
func HistStack(pcs []uint64, syms trigger.Names) []uint64 {
	fs := HistStackFrames(pcs, syms)
	out := make([]uint64, 0, len(fs))
	for _, f := range fs {
		out = append(out, f.PC)
	}
	return out
}

// HistStackFrames is HistStack's frames, named: what a hist trigger's
// stack variable holds for the hit (the kernel saves it as it saves a
// stacktrace key), and so what a synthetic event's stack field fed by it
// prints.
func HistStackFrames(pcs []uint64, syms trigger.Names) []Frame {
	fs, cut := kernelFrames(pcs, syms)
	skip := histStackSkip
	if !cut && (len(fs) == 0 || !perfFunc(fs[0])) {
		// No BPF machinery: a static event's program's stack
		// (bpf_get_stack of its context), which starts at the caller of
		// the tracer's function (the tracepoint's iterator, or its site
		// when the static call reaches the one probe directly), or at
		// the perf path's function that stands for it (6.12's
		// perf_syscall_enter).
		skip--
	}
	if len(fs) <= skip {
		return nil
	}
	fs = fs[skip:]
	return fs[:min(len(fs), HistStackDepth)]
}
