package live

import (
	"encoding/binary"

	"github.com/ktrace-dev/ktrace/bpfcode"
	"github.com/ktrace-dev/ktrace/tracer"
	"github.com/ktrace-dev/ktrace/trigger"
)

// Stacktrace triggers write the task's kernel stack into the static
// events' ring (bpfcode.StackRecordSize) under stackNum; the reader prints
// it as the kernel's trace prints a stack entry.

// stackNum is the number stack records carry in the static events' ring
// (no event has it: events are numbered from 1 up).
const stackNum = ^uint32(0)

// appendStack appends a stack record's text: "<stack trace>" and a
// " => FUNCTION" line per frame, the frames the kernel's own tracer would
// show (tracer.KernelFrames).
func (b *Backend) appendStack(line, raw []byte) []byte {
	size := int32(binary.LittleEndian.Uint32(raw[12:]))
	var names trigger.Names
	if b.model != nil {
		names = b.model
	}
	var frames []tracer.Frame
	if size >= 0 && size&bpfcode.StackSplit != 0 {
		top := stackPCs(raw, 0, int(size&0xffff)/8, bpfcode.StackTopFrames)
		rest := stackPCs(raw, bpfcode.StackTopFrames, int(size>>16&0x3fff)/8, bpfcode.StackFrames-bpfcode.StackTopFrames)
		frames = tracer.TracepointFrames(top, rest, names)
	} else {
		frames = tracer.KernelFrames(stackPCs(raw, 0, int(size)/8, bpfcode.StackFrames), names)
	}
	line = append(line, "<stack trace>"...)
	offset := b.TraceOptions != nil && b.TraceOptions.OptionOn("sym-offset")
	for _, f := range frames {
		line = append(line, "\n => "...)
		line = append(line, f.Text(offset)...)
	}
	return line
}

// stackPCs is a stack record's n addresses from slot first, at most max.
func stackPCs(raw []byte, first, n, max int) []uint64 {
	var pcs []uint64
	for i := 0; i < n && i < max; i++ {
		at := bpfcode.SynthHeader + 8*(first+i)
		if at+8 > len(raw) {
			break
		}
		pcs = append(pcs, binary.LittleEndian.Uint64(raw[at:]))
	}
	return pcs
}

// stackText is a synthetic event's stack field's frames as the kernel
// prints them (%pS), from the frames its generating program saved: those
// of the BPF path and the kernel's own hist frames taken off
// (tracer.HistStackFrames), as for a stacktrace key.
func (b *Backend) stackText(pcs []uint64) []string {
	var names trigger.Names
	if b.model != nil {
		names = b.model
	}
	var out []string
	for _, f := range tracer.HistStackFrames(pcs, names) {
		out = append(out, f.Text(true))
	}
	return out
}
