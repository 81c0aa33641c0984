package live

import (
	"encoding/binary"
	"fmt"
	"os"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"
)

// Forks and freed tasks for options/event-fork (tracefs.TaskFollower):
// programs on sched_process_fork and sched_process_free write a record
// into the static events' ring, so that the reader passes them on in
// order with the events' records and a child's first event finds the pid
// lists already following it.

// Numbers of the task records in the static events' ring.
const (
	taskForkNum = ^uint32(0) - 6
	taskFreeNum = ^uint32(0) - 7
)

// taskRecord is the size of a task record after the static header: the
// parent's and the child's pids (a freed task's pid and 0), and the
// thread group of the task that forked.
const taskRecord = 12

// taskFollower is the attached programs.
type taskFollower struct {
	progs []*ebpf.Program
	links []link.Link
}

func (t *taskFollower) close() {
	closeLinks(t.links)
	for _, p := range t.progs {
		p.Close()
	}
}

// FollowTasks attaches (on) or detaches the fork and free programs.
func (b *Backend) FollowTasks(on bool) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !on {
		if b.tasks != nil {
			b.tasks.close()
			b.tasks = nil
		}
		return nil
	}
	if b.tasks != nil {
		return nil
	}
	st, err := b.staticTracer()
	if err != nil {
		return fmt.Errorf("following forks: %w", err)
	}
	t := &taskFollower{}
	// sched_process_fork: parent_pid at 24, child_pid at 44;
	// sched_process_free: pid at 24 (both pinned kernels' formats).
	for _, tp := range []struct {
		name          string
		num           uint32
		first, second int16
	}{{"sched_process_fork", taskForkNum, 24, 44}, {"sched_process_free", taskFreeNum, 24, -1}} {
		insns := asm.Instructions{
			asm.Mov.Reg(asm.R6, asm.R1),
			asm.FnGetCurrentPidTgid.Call(),
			asm.Mov.Reg(asm.R8, asm.R0),
		}
		insns = append(insns, ringRecord(st.ring, staticHeader+taskRecord, tp.num, asm.R7)...)
		insns = append(insns,
			asm.StoreImm(asm.R7, 12, 0, asm.Word),
			asm.LoadMem(asm.R1, asm.R6, tp.first, asm.Word),
			asm.StoreMem(asm.R7, staticHeader, asm.R1, asm.Word),
			asm.StoreImm(asm.R7, staticHeader+4, 0, asm.Word),
		)
		if tp.second >= 0 {
			insns = append(insns,
				asm.LoadMem(asm.R1, asm.R6, tp.second, asm.Word),
				asm.StoreMem(asm.R7, staticHeader+4, asm.R1, asm.Word),
			)
		}
		insns = append(insns,
			asm.Mov.Reg(asm.R1, asm.R8),
			asm.RSh.Imm(asm.R1, 32),
			asm.StoreMem(asm.R7, staticHeader+8, asm.R1, asm.Word),
			asm.Mov.Reg(asm.R1, asm.R7),
			asm.Mov.Imm(asm.R2, 0),
			asm.FnRingbufSubmit.Call(),
			asm.Mov.Imm(asm.R0, 0).WithSymbol("out"),
			asm.Return(),
		)
		prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{Name: "ktrace_etask", Type: ebpf.TracePoint, License: "GPL", Instructions: insns})
		if err != nil {
			t.close()
			return fmt.Errorf("loading the event-fork program: %w", err)
		}
		t.progs = append(t.progs, prog)
		l, err := link.Tracepoint("sched", tp.name, prog, nil)
		if err != nil {
			t.close()
			return fmt.Errorf("following forks (sched/%s): %w", tp.name, err)
		}
		t.links = append(t.links, l)
	}
	b.tasks = t
	return nil
}

// taskEntry passes a task record (r after the static header) to the FS.
// tgid is the forking task's thread group: a fork by one of ktrace's own
// threads counts as one by ktrace's pid, which is `ktrace sh`'s $$.
func (b *Backend) taskEntry(num uint32, r []byte) {
	first := int(binary.LittleEndian.Uint32(r[0:]))
	tgid := binary.LittleEndian.Uint32(r[8:])
	switch num {
	case taskForkNum:
		if b.TaskForked == nil {
			return
		}
		if int(tgid) == os.Getpid() {
			first = os.Getpid()
		}
		b.TaskForked(first, int(binary.LittleEndian.Uint32(r[4:])))
	case taskFreeNum:
		if b.TaskFreed != nil {
			b.TaskFreed(first)
		}
	}
}
