package kernel

import (
	"errors"
	"fmt"

	"github.com/cilium/ebpf/btf"
)

// PreemptCount locates the x86-64 kernel's per-CPU preempt count, which
// holds the context a trace record's common_flags and
// common_preempt_count describe (hardirq, softirq, NMI, bottom halves
// off, preemption depth): a program reads CPU c's count at
// *(PerCPUOffsets + 8*c) + Offset.
type PreemptCount struct {
	// PerCPUOffsets is the address of __per_cpu_offset, the base of each
	// CPU's per-CPU area.
	PerCPUOffsets uint64
	// Offset is the count's place in a per-CPU area: pcpu_hot's
	// preempt_count (6.2 on) or __preempt_count.
	Offset uint64
}

// PreemptCount finds the per-CPU preempt count from kallsyms (and, for
// pcpu_hot, BTF); an error says why it cannot be read on this kernel.
func (m *Model) PreemptCount() (PreemptCount, error) {
	if m.arch == nil || m.arch.Name != "x86_64" {
		return PreemptCount{}, errors.New("the per-CPU preempt count is read on x86_64 only")
	}
	base, ok := m.uniqueSymbol("__per_cpu_offset")
	if !ok {
		return PreemptCount{}, errors.New("kallsyms has no __per_cpu_offset")
	}
	if hot, ok := m.uniqueSymbol("pcpu_hot"); ok {
		spec := m.BTF()
		if spec == nil {
			return PreemptCount{}, fmt.Errorf("pcpu_hot's layout needs BTF: %w", m.BTFError())
		}
		var st *btf.Struct
		if err := spec.TypeByName("pcpu_hot", &st); err != nil {
			return PreemptCount{}, fmt.Errorf("BTF: struct pcpu_hot: %w", err)
		}
		off, ok := memberOffset(st, "preempt_count")
		if !ok {
			return PreemptCount{}, errors.New("BTF: struct pcpu_hot has no preempt_count")
		}
		return PreemptCount{PerCPUOffsets: base.Addr, Offset: hot.Addr + uint64(off)}, nil
	}
	if pc, ok := m.uniqueSymbol("__preempt_count"); ok {
		return PreemptCount{PerCPUOffsets: base.Addr, Offset: pc.Addr}, nil
	}
	return PreemptCount{}, errors.New("kallsyms has neither pcpu_hot nor __preempt_count")
}

// uniqueSymbol is vmlinux's one symbol called name.
func (m *Model) uniqueSymbol(name string) (Symbol, bool) {
	syms := m.Symbols("", name)
	if len(syms) != 1 {
		return Symbol{}, false
	}
	return syms[0], true
}

// memberOffset is the byte offset of the member called name in a struct
// or union, looked for through its anonymous members too.
func memberOffset(t btf.Type, name string) (uint32, bool) {
	var members []btf.Member
	switch t := t.(type) {
	case *btf.Struct:
		members = t.Members
	case *btf.Union:
		members = t.Members
	default:
		return 0, false
	}
	for _, mb := range members {
		if mb.Name == name {
			return mb.Offset.Bytes(), true
		}
		if mb.Name == "" {
			if off, ok := memberOffset(btf.UnderlyingType(mb.Type), name); ok {
				return mb.Offset.Bytes() + off, true
			}
		}
	}
	return 0, false
}
