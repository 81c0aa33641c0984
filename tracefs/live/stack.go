package live

import (
	"encoding/binary"
	"fmt"
	"strings"

	"github.com/ktrace-dev/ktrace/bpfcode"
)

// Stacktrace triggers write the task's kernel stack into the static
// events' ring (bpfcode.StackRecordSize) under stackNum; the reader prints
// it as the kernel's trace prints a stack entry.

// stackNum is the number stack records carry in the static events' ring
// (no event has it: events are numbered from 1 up).
const stackNum = ^uint32(0)

// appendStack appends a stack record's text: "<stack trace>" and a
// " => FUNCTION" line per frame, the frames the kernel's own tracer would
// show (kernelFrames).
func (b *Backend) appendStack(line, raw []byte) []byte {
	n := int(int32(binary.LittleEndian.Uint32(raw[12:]))) / 8
	var pcs []uint64
	for i := 0; i < n && i < bpfcode.StackFrames && bpfcode.SynthHeader+8*i+8 <= len(raw); i++ {
		pcs = append(pcs, binary.LittleEndian.Uint64(raw[bpfcode.SynthHeader+8*i:]))
	}
	line = append(line, "<stack trace>"...)
	offset := b.TraceOptions != nil && b.TraceOptions.OptionOn("sym-offset")
	for _, f := range kernelFrames(pcs, symbols{b.model}) {
		line = append(line, "\n => "...)
		line = append(line, f.text(offset)...)
	}
	return line
}

// frame is one line of a printed stack.
type frame struct {
	pc         uint64
	name       string // "" when no symbol covers pc
	off, size  uint64
	module     string
	renamedFor bool // the name is the kernel tracer's, not pc's
}

// text is seq_print_ip_sym: the function, with +OFFSET/SIZE under the
// sym-offset option, or the address when no symbol covers it.
func (f frame) text(offset bool) string {
	if f.name == "" {
		return fmt.Sprintf("0x%x", f.pc)
	}
	s := f.name
	if offset && !f.renamedFor {
		s += fmt.Sprintf("+0x%x/0x%x", f.off, f.size)
	}
	if f.module != "" {
		s += " [" + f.module + "]"
	}
	return s
}

// kernelFrames turns the stack a BPF program saw into the one the
// kernel's tracer shows for the same hit: the frames of the BPF program
// and of the perf path that ran it go, and the perf path's function
// becomes the tracer's (perf_trace_CLASS is trace_event_raw_event_CLASS,
// perf_syscall_enter is ftrace_syscall_enter, kprobe_perf_func is
// kprobe_trace_func, ...), which the kernel calls in its place.
func kernelFrames(pcs []uint64, syms symbols) []frame {
	var fs []frame
	for _, pc := range pcs {
		if pc == 0 {
			break
		}
		f := frame{pc: pc}
		if name, mod, start, size, ok := syms.Lookup(pc); ok {
			f.name, f.module, f.off, f.size = name, mod, pc-start, size
		}
		fs = append(fs, f)
	}
	// The last frame of the BPF machinery: everything up to it goes.
	cut := -1
	for i, f := range fs {
		switch baseName(f.name) {
		case "trace_call_bpf", "perf_trace_run_bpf_submit", "perf_call_bpf_enter", "perf_call_bpf_exit":
			cut = i
		}
	}
	if cut < 0 {
		return fs
	}
	fs = fs[cut+1:]
	if len(fs) == 0 {
		return fs
	}
	if tracer, ok := tracerFunc(baseName(fs[0].name)); ok {
		fs[0] = frame{pc: fs[0].pc, name: tracer, renamedFor: true}
		// The dispatcher calls the perf function last, a jump that
		// leaves no frame of its own; it calls the tracer's function
		// before, from a frame of its own.
		if d, ok := dispatcher[tracer]; ok && (len(fs) < 2 || fs[1].name != d) {
			fs = append(fs[:1], append([]frame{{name: d, renamedFor: true}}, fs[1:]...)...)
		}
	}
	return fs
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

// baseName is a function's name without the suffix the compiler gives
// its copies (perf_call_bpf_enter.isra.0).
func baseName(name string) string {
	base, _, _ := strings.Cut(name, ".")
	return base
}
