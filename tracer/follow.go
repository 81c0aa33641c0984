package tracer

import (
	"errors"
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/link"

	"github.com/ktrace-dev/ktrace/kernel"
)

// Following a process tree (record --follow) happens in the kernel: a
// hash map holds the thread group ids of the tree, two raw-tracepoint
// programs keep it (sched_process_fork adds the child of a member,
// sched_process_exit removes a group when its leader exits), and every
// probe's program looks its process up there before it writes anything
// (bpfcode.ProbeProgram.Follow). No event of another process is
// written to the ring buffer, and no child is missed between its fork and
// the reader noticing it.
//
// The root is the tracing process itself, marked followRoot: its own
// events are not recorded, those of the command it starts are.

// Values of the follow map.
const (
	followed   = 1 // recorded
	followRoot = 2 // the tracer: not recorded, its children are
)

// followMaxProcs bounds the processes one tree can hold.
const followMaxProcs = 1 << 16

// newFollowMap creates the follow map with root in it.
func newFollowMap(root int) (*ebpf.Map, error) {
	m, err := ebpf.NewMap(&ebpf.MapSpec{Name: "ktrace_follow", Type: ebpf.Hash, KeySize: 4, ValueSize: 4, MaxEntries: followMaxProcs})
	if err != nil {
		return nil, fmt.Errorf("tracer: creating map ktrace_follow: %w", err)
	}
	if err := m.Put(uint32(root), uint32(followRoot)); err != nil {
		m.Close()
		return nil, fmt.Errorf("tracer: follow map: %w", err)
	}
	return m, nil
}

// taskOffsets returns the byte offsets of task_struct's pid and tgid in
// the model's BTF.
func taskOffsets(m *kernel.Model) (pid, tgid uint32, err error) {
	spec := m.BTF()
	if spec == nil {
		return 0, 0, errors.New("following a process tree needs the kernel's BTF")
	}
	var ts *btf.Struct
	if err := spec.TypeByName("task_struct", &ts); err != nil {
		return 0, 0, fmt.Errorf("BTF: task_struct: %w", err)
	}
	found := 0
	for _, mem := range ts.Members {
		switch mem.Name {
		case "pid":
			pid = uint32(mem.Offset.Bytes())
			found++
		case "tgid":
			tgid = uint32(mem.Offset.Bytes())
			found++
		}
	}
	if found != 2 {
		return 0, 0, errors.New("BTF: task_struct has no pid and tgid")
	}
	return pid, tgid, nil
}

// readTaskField emits: *(u32 *)(R10+dst) = task->field, the task pointer
// being the raw tracepoint's argument arg; a failed read ends the program.
func readTaskField(arg int16, off uint32, dst int16) asm.Instructions {
	return asm.Instructions{
		asm.LoadMem(asm.R3, asm.R6, 8*arg, asm.DWord),
		asm.Add.Imm(asm.R3, int32(off)),
		asm.Mov.Reg(asm.R1, asm.R10),
		asm.Add.Imm(asm.R1, int32(dst)),
		asm.Mov.Imm(asm.R2, 4),
		asm.FnProbeReadKernel.Call(),
		asm.JNE.Imm(asm.R0, 0, "out"),
	}
}

// taskField is a u32 field of a task_struct that a raw tracepoint's
// argument arg points to, at byte offset off.
type taskField struct {
	arg int16
	off uint32
}

// compareTasks starts a follow program: it reads a to the stack at -4 and
// b at -8, and ends the program (at "out") when skip holds between them.
func compareTasks(a, b taskField, skip asm.JumpOp) asm.Instructions {
	ins := asm.Instructions{asm.Mov.Reg(asm.R6, asm.R1)}
	ins = append(ins, readTaskField(a.arg, a.off, -4)...)
	ins = append(ins, readTaskField(b.arg, b.off, -8)...)
	return append(ins,
		asm.LoadMem(asm.R1, asm.R10, -4, asm.Word),
		asm.LoadMem(asm.R2, asm.R10, -8, asm.Word),
		skip.Reg(asm.R1, asm.R2, "out"),
	)
}

// followKey emits the first two arguments of a follow map helper: the map
// and a pointer to the key on the stack at key.
func followKey(follow *ebpf.Map, key int16) asm.Instructions {
	return asm.Instructions{
		asm.LoadMapPtr(asm.R1, follow.FD()),
		asm.Mov.Reg(asm.R2, asm.R10),
		asm.Add.Imm(asm.R2, int32(key)),
	}
}

// followExit ends a follow program, at the label "out" its jumps take.
func followExit() asm.Instructions {
	return asm.Instructions{
		asm.Mov.Imm(asm.R0, 0).WithSymbol("out"),
		asm.Return(),
	}
}

// followPrograms returns the fork and exit programs keeping follow.
func followPrograms(m *kernel.Model, follow *ebpf.Map) (fork, exit *ebpf.ProgramSpec, err error) {
	pidOff, tgidOff, err := taskOffsets(m)
	if err != nil {
		return nil, nil, err
	}
	// sched_process_fork(struct task_struct *parent, struct task_struct *child)
	f := compareTasks(taskField{0, tgidOff}, taskField{1, tgidOff}, asm.JEq) // a new thread of a group is in the group already
	f = append(f, followKey(follow, -4)...)
	f = append(f,
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, "out"),
		asm.StoreImm(asm.R10, -12, followed, asm.Word),
	)
	f = append(f, followKey(follow, -8)...)
	f = append(f,
		asm.Mov.Reg(asm.R3, asm.R10),
		asm.Add.Imm(asm.R3, -12),
		asm.Mov.Imm(asm.R4, 0), // BPF_ANY
		asm.FnMapUpdateElem.Call(),
	)
	f = append(f, followExit()...)
	// sched_process_exit(struct task_struct *p): the group leader's exit
	// ends the group.
	x := compareTasks(taskField{0, pidOff}, taskField{0, tgidOff}, asm.JNE)
	x = append(x, followKey(follow, -8)...)
	x = append(x, asm.FnMapDeleteElem.Call())
	x = append(x, followExit()...)
	spec := func(name string, ins asm.Instructions) *ebpf.ProgramSpec {
		return &ebpf.ProgramSpec{Name: name, Type: ebpf.RawTracepoint, Instructions: ins, License: "GPL"}
	}
	return spec("ktrace_fork", f), spec("ktrace_exit", x), nil
}

// attachFollow loads and attaches the programs keeping the follow map.
func (s *Session) attachFollow(m *kernel.Model) error {
	fork, exit, err := followPrograms(m, s.maps.Follow)
	if err != nil {
		return fmt.Errorf("tracer: --follow: %w", err)
	}
	g := &Group{s: s}
	s.groups = append(s.groups, g)
	for _, tp := range []struct {
		name string
		spec *ebpf.ProgramSpec
	}{{"sched_process_fork", fork}, {"sched_process_exit", exit}} {
		prog, err := g.load(tp.spec, false)
		if err != nil {
			return fmt.Errorf("tracer: --follow: loading the %s program: %w", tp.name, err)
		}
		l, err := link.AttachRawTracepoint(link.RawTracepointOptions{Name: tp.name, Program: prog})
		if err != nil {
			return fmt.Errorf("tracer: --follow: attaching to %s: %w", tp.name, err)
		}
		g.links = append(g.links, l)
	}
	return nil
}
