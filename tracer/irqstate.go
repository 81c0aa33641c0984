package tracer

import (
	"errors"
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"

	"github.com/ktrace-dev/ktrace/bpfcode"
	"github.com/ktrace-dev/ktrace/kernel"
)

// IrqState is the interrupt flags a kprobe on bpfcode.IrqStateFunction
// takes for static events' programs and event probes on them, which have
// no registers to read it from (bpfcode.CPUContext.IrqState).
type IrqState struct {
	Map  *ebpf.Map
	prog *ebpf.Program
	link link.Link
}

// AttachIrqState makes the map and attaches its kprobe.
func AttachIrqState(arch *kernel.Arch) (*IrqState, error) {
	m, err := ebpf.NewMap(&ebpf.MapSpec{Name: "ktrace_irqs", Type: ebpf.PerCPUArray, KeySize: 4, ValueSize: bpfcode.IrqStateValueSize, MaxEntries: bpfcode.IrqStateSlots})
	if err != nil {
		return nil, fmt.Errorf("creating map ktrace_irqs: %w", err)
	}
	ins, err := bpfcode.IrqStateProgram(arch, m)
	if err != nil {
		m.Close()
		return nil, err
	}
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{Name: "ktrace_irqs", Type: ebpf.Kprobe, License: "GPL", Instructions: ins})
	if err != nil {
		m.Close()
		return nil, fmt.Errorf("loading the interrupt flag's program: %w", err)
	}
	l, err := link.Kprobe(bpfcode.IrqStateFunction, prog, nil)
	if err != nil {
		prog.Close()
		m.Close()
		return nil, fmt.Errorf("attaching the interrupt flag's program to %s: %w", bpfcode.IrqStateFunction, err)
	}
	return &IrqState{Map: m, prog: prog, link: l}, nil
}

// Close detaches the kprobe and frees the map.
func (s *IrqState) Close() error {
	if s == nil {
		return nil
	}
	return errors.Join(s.link.Close(), s.prog.Close(), s.Map.Close())
}
