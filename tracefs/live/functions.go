package live

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"

	"github.com/ktrace-dev/ktrace/bpfcode"
	"github.com/ktrace-dev/ktrace/kernel"
	"github.com/ktrace-dev/ktrace/tracefs"
	"github.com/ktrace-dev/ktrace/tracer"
)

// The function tracer: one BPF program attached to the entry of every
// selected function records the function and its caller into the static
// events' ring, under funcNum; the reader prints the entry as the
// kernel's function tracer does ("FUNC <-PARENT"). Where the kernel has
// kprobe-multi links (fprobe) one link attaches every function; elsewhere
// each function gets a kprobe of its own, which bounds how many can be
// traced (funcKprobeMax).

var _ tracefs.FunctionTracer = (*Backend)(nil)

// funcNum is the number function entries carry in the static events'
// ring (no event has it).
const funcNum = ^uint32(0) - 1

// Stacks written by the function tracer (func_stack_trace) and by
// stacktrace function commands carry these numbers: their frames start
// with the BPF and probe machinery, taken off when printed (funcStack).
const (
	funcStackNum  = ^uint32(0) - 2
	probeStackNum = ^uint32(0) - 3
)

// funcRecord is the size of a function entry after the static header:
// the function's address, the caller's return address, and its
// common_flags and common_preempt_count bytes (only the irqs-off bit
// where the model does not tell where the CPU's preempt count is).
const funcRecord = 24

// funcKprobeMax is how many functions the tracer attaches one kprobe
// each to, on kernels without kprobe-multi links.
const funcKprobeMax = 4096

// funcTracer is the function tracer's program, links and pid maps.
type funcTracer struct {
	prog  *ebpf.Program
	links []link.Link
	// pids and noPids are set_ftrace_pid's and set_ftrace_notrace_pid's
	// tasks (nil: no list), which function-fork grows.
	pids, noPids *ebpf.Map
	// forkProgs follow forks and frees (function-fork).
	forkProgs []*ebpf.Program
	// graph is the function_graph tracer's part (nil for the function
	// tracer), over the functions funcs; trace is what it was made for.
	graph *graphTracer
	funcs []kernel.FtraceRecord
	trace *tracefs.FunctionTrace
}

// sameAttachment reports whether a and b attach the same programs to the
// same functions: they differ at most in the graph tracer's settings,
// which its maps hold.
func sameAttachment(a, b *tracefs.FunctionTrace) bool {
	if a.Graph != b.Graph || a.Stack != b.Stack || a.Fork != b.Fork ||
		!slices.Equal(a.Pids, b.Pids) || !slices.Equal(a.NoPids, b.NoPids) || len(a.Funcs) != len(b.Funcs) {
		return false
	}
	for i := range a.Funcs {
		if a.Funcs[i].Addr != b.Funcs[i].Addr {
			return false
		}
	}
	return true
}

func (ft *funcTracer) close() {
	closeLinks(ft.links)
	if ft.graph != nil {
		ft.graph.close()
	}
	if ft.prog != nil {
		ft.prog.Close()
	}
	for _, p := range ft.forkProgs {
		p.Close()
	}
	for _, m := range []*ebpf.Map{ft.pids, ft.noPids} {
		if m != nil {
			m.Close()
		}
	}
}

// SetFunctionTrace starts, changes (t non-nil) or stops the function
// tracer. The new attachment is made before the old one goes, so a
// failure leaves what was traced before.
func (b *Backend) SetFunctionTrace(t *tracefs.FunctionTrace) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	old := b.funcs
	if t == nil {
		b.funcs = nil
		if old != nil {
			old.close()
		}
		return nil
	}
	if old != nil && old.graph != nil && sameAttachment(old.trace, t) {
		// Only set_graph_function, set_graph_notrace or
		// max_graph_depth changed: the running programs take the new
		// settings from their maps.
		if err := old.graph.setConf(t, old.funcs); err != nil {
			return fmt.Errorf("function tracer: %w", err)
		}
		old.trace = t
		return nil
	}
	st, err := b.staticTracer()
	if err != nil {
		return fmt.Errorf("function tracer: %w", err)
	}
	ft, err := b.attachFunctions(st, t)
	if err != nil {
		if b.warn != nil {
			fmt.Fprintf(b.warn, "ktrace: function tracer: %v\n", err)
		}
		return fmt.Errorf("function tracer: %w", attachErrno(err))
	}
	b.funcs = ft
	if old != nil {
		old.close()
	}
	b.fnMu.Lock()
	b.fnLast = nil
	b.fnMu.Unlock()
	return nil
}

// attachFunctions loads the tracer's program for t and attaches it.
func (b *Backend) attachFunctions(st *staticTracer, t *tracefs.FunctionTrace) (*funcTracer, error) {
	ft := &funcTracer{trace: t}
	ok := false
	defer func() {
		if !ok {
			ft.close()
		}
	}()
	var err error
	if ft.pids, err = pidMap(t.Pids, t.Fork); err != nil {
		return nil, err
	}
	if ft.noPids, err = pidMap(t.NoPids, t.Fork); err != nil {
		return nil, err
	}
	pids, noPids := ft.pids, ft.noPids
	if t.Fork && (pids != nil || noPids != nil) {
		if err := ft.followForks(pids, noPids); err != nil {
			return nil, err
		}
	}
	var funcs []kernel.FtraceRecord
	for _, r := range t.Funcs {
		if r.Addr != 0 {
			funcs = append(funcs, r)
		}
	}
	if len(funcs) == 0 {
		ok = true
		return ft, nil
	}
	arch := b.model.Arch()
	cookies := make([]uint64, len(funcs))
	for i, r := range funcs {
		cookies[i] = r.Addr
	}
	if t.Graph {
		ft.funcs = funcs
		if err := b.attachGraph(st, ft, t, funcs, cookies, pids, noPids); err != nil {
			return nil, fmt.Errorf("%d functions selected: %w", len(funcs), err)
		}
		ok = true
		return ft, nil
	}
	prog, links, refused, err := b.attachEntries(funcs, cookies, func(multi bool) (*ebpf.Program, error) {
		return funcProgram(st, arch, pids, noPids, multi, t.Stack)
	})
	if err != nil {
		return nil, fmt.Errorf("%d functions selected: %w", len(funcs), err)
	}
	ft.prog, ft.links = prog, append(ft.links, links...)
	var skipped []string
	for i, e := range refused {
		if e == nil {
			continue
		}
		sym := funcs[i].Name
		if funcs[i].Module != "" {
			sym = funcs[i].Module + ":" + sym
		}
		skipped = append(skipped, sym)
	}
	if len(skipped) > 0 && b.warn != nil {
		ex := skipped
		if len(ex) > 5 {
			ex = ex[:5]
		}
		fmt.Fprintf(b.warn, "ktrace: function tracer: %d of %d functions are not traced, the kernel refused a kprobe on them (%v...)\n", len(skipped), len(funcs), ex)
	}
	if len(links) == 0 {
		return nil, fmt.Errorf("no kprobe could be attached to the %d functions selected: %w", len(funcs), errTooMany)
	}
	ok = true
	return ft, nil
}

// linkWorkers is how many kprobes are attached or detached at once: each
// detach waits for an RCU grace period, which parallel detaches share.
const linkWorkers = 32

// parallel runs fn for 0..n-1 on up to linkWorkers goroutines.
func parallel(n int, fn func(i int)) {
	var wg sync.WaitGroup
	next := make(chan int)
	for w := 0; w < min(n, linkWorkers); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				fn(i)
			}
		}()
	}
	for i := 0; i < n; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
}

// closeLinks closes links, in parallel.
func closeLinks(links []link.Link) {
	parallel(len(links), func(i int) { links[i].Close() })
}

// funcPidMax bounds a pid list that follows forks.
const funcPidMax = 1 << 15

// followForks makes the pid lists follow the tasks, as the kernel does
// under the function-fork option: a child forked by a task on a list
// joins it, a task leaves the lists when it is freed.
func (ft *funcTracer) followForks(pids, noPids *ebpf.Map) error {
	var lists []*ebpf.Map
	for _, m := range []*ebpf.Map{pids, noPids} {
		if m != nil {
			lists = append(lists, m)
		}
	}
	// sched_process_fork: parent_pid at 24, child_pid at 44;
	// sched_process_free: pid at 24 (both pinned kernels' formats).
	fork := asm.Instructions{
		asm.Mov.Reg(asm.R6, asm.R1),
		asm.LoadMem(asm.R1, asm.R6, 24, asm.Word),
		asm.StoreMem(asm.R10, -4, asm.R1, asm.Word),
		asm.LoadMem(asm.R1, asm.R6, 44, asm.Word),
		asm.StoreMem(asm.R10, -8, asm.R1, asm.Word),
		asm.StoreImm(asm.R10, -12, 1, asm.Byte),
	}
	free := asm.Instructions{
		asm.LoadMem(asm.R2, asm.R1, 24, asm.Word),
		asm.StoreMem(asm.R10, -4, asm.R2, asm.Word),
	}
	// ktrace's shell is one task to its user, whichever of ktrace's
	// threads forks: a fork by ktrace counts as one by its pid (the
	// shell's $$).
	self := int32(os.Getpid())
	fork = append(fork,
		asm.FnGetCurrentPidTgid.Call(),
		asm.RSh.Imm(asm.R0, 32),
		asm.StoreMem(asm.R10, -16, asm.R0, asm.Word),
	)
	for i, m := range lists {
		next, found := fmt.Sprintf("next%d", i), fmt.Sprintf("found%d", i)
		fork = append(fork, mapLookup(m, -4)...)
		fork = append(fork,
			asm.JNE.Imm(asm.R0, 0, found),
			asm.LoadMem(asm.R1, asm.R10, -16, asm.Word),
			asm.JNE.Imm(asm.R1, self, next),
		)
		fork = append(fork, mapLookup(m, -16)...)
		fork = append(fork,
			asm.JEq.Imm(asm.R0, 0, next),
			asm.LoadMapPtr(asm.R1, m.FD()).WithSymbol(found),
			asm.Mov.Reg(asm.R2, asm.R10),
			asm.Add.Imm(asm.R2, -8),
			asm.Mov.Reg(asm.R3, asm.R10),
			asm.Add.Imm(asm.R3, -12),
			asm.Mov.Imm(asm.R4, 0),
			asm.FnMapUpdateElem.Call(),
			asm.Mov.Imm(asm.R0, 0).WithSymbol(next),
		)
		free = append(free,
			asm.LoadMapPtr(asm.R1, m.FD()),
			asm.Mov.Reg(asm.R2, asm.R10),
			asm.Add.Imm(asm.R2, -4),
			asm.FnMapDeleteElem.Call(),
		)
	}
	for _, tp := range []struct {
		name  string
		insns asm.Instructions
	}{{"sched_process_fork", fork}, {"sched_process_free", free}} {
		insns := append(tp.insns, asm.Mov.Imm(asm.R0, 0), asm.Return())
		prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{Name: "ktrace_ffork", Type: ebpf.TracePoint, License: "GPL", Instructions: insns})
		if err != nil {
			return fmt.Errorf("loading the function-fork program: %w", err)
		}
		ft.forkProgs = append(ft.forkProgs, prog)
		l, err := link.Tracepoint("sched", tp.name, prog, nil)
		if err != nil {
			return fmt.Errorf("following forks (sched/%s): %w", tp.name, err)
		}
		ft.links = append(ft.links, l)
	}
	return nil
}

// FunctionTracePids reads set_ftrace_pid's and set_ftrace_notrace_pid's
// tasks as the function tracer has them now (function-fork changes
// them); ok is false when it does not run.
func (b *Backend) FunctionTracePids() (pids, noPids []int, ok bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.funcs == nil || len(b.funcs.forkProgs) == 0 {
		return nil, nil, false
	}
	read := func(m *ebpf.Map) []int {
		if m == nil {
			return nil
		}
		var out []int
		var k uint32
		var v uint8
		it := m.Iterate()
		for it.Next(&k, &v) {
			out = append(out, int(k))
		}
		return out
	}
	return read(b.funcs.pids), read(b.funcs.noPids), true
}

// attachEntries attaches a program, loaded by load for the kind of link,
// to the entries of funcs, each with its attach cookie: through one
// kprobe-multi link where the kernel has them (fprobe), else through a
// kprobe per function, at most funcKprobeMax of them. refused holds, by
// function, why the kernel refused its kprobe (nil: attached; the others
// stay attached).
func (b *Backend) attachEntries(funcs []kernel.FtraceRecord, cookies []uint64, load func(multi bool) (*ebpf.Program, error)) (prog *ebpf.Program, links []link.Link, refused []error, err error) {
	if b.model.Config("CONFIG_FPROBE") != "n" {
		// A kernel without kprobe-multi links (6.1) says so when the
		// link is made.
		prog, err := load(true)
		if err != nil {
			return nil, nil, nil, err
		}
		addrs := make([]uintptr, len(funcs))
		for i, r := range funcs {
			addrs[i] = uintptr(r.Addr)
		}
		l, err := link.KprobeMulti(prog, link.KprobeMultiOptions{Addresses: addrs, Cookies: cookies})
		if err == nil {
			return prog, []link.Link{l}, nil, nil
		}
		prog.Close()
		if !errors.Is(err, ebpf.ErrNotSupported) {
			return nil, nil, nil, fmt.Errorf("attaching a kprobe-multi link: %w", err)
		}
	}
	if len(funcs) > funcKprobeMax {
		return nil, nil, nil, fmt.Errorf("without kprobe-multi links (fprobe) each function needs a kprobe of its own, and ktrace attaches at most %d; narrow set_ftrace_filter: %w", funcKprobeMax, errTooMany)
	}
	if prog, err = load(false); err != nil {
		return nil, nil, nil, err
	}
	all := make([]link.Link, len(funcs))
	refused = make([]error, len(funcs))
	parallel(len(funcs), func(i int) {
		all[i], refused[i] = link.Kprobe(funcs[i].Name, prog, &link.KprobeOptions{Cookie: cookies[i]})
	})
	for i := range funcs {
		if refused[i] == nil {
			links = append(links, all[i])
		}
	}
	return prog, links, refused, nil
}

// errTooMany is the errno of a selection that cannot be traced as a
// whole: ENOMEM, as an allocation the kernel could not make.
var errTooMany = syscall.ENOMEM

// pidMap makes a set of pids the program looks tasks up in (nil for no
// pids).
func pidMap(pids []int, fork bool) (*ebpf.Map, error) {
	if len(pids) == 0 {
		return nil, nil
	}
	size := uint32(len(pids))
	if fork {
		// Children join their parents' list.
		size = max(size, funcPidMax)
	}
	m, err := ebpf.NewMap(&ebpf.MapSpec{Name: "ktrace_fpids", Type: ebpf.Hash, KeySize: 4, ValueSize: 1, MaxEntries: size})
	if err != nil {
		return nil, fmt.Errorf("creating the pid map: %w", err)
	}
	for _, p := range pids {
		if err := m.Put(uint32(p), uint8(1)); err != nil {
			m.Close()
			return nil, fmt.Errorf("filling the pid map: %w", err)
		}
	}
	return m, nil
}

// funcProgram is the function tracer's program: for a task that is
// traced (not ktrace itself, in pids when there are some, not in
// noPids), with tracing on, a record of the function, the return address at the stack pointer and whether
// interrupts were off.
func funcProgram(st *staticTracer, arch *kernel.Arch, pids, noPids *ebpf.Map, multi, stack bool) (*ebpf.Program, error) {
	spOff, ok1 := arch.Regs[arch.SPReg]
	flagsOff, ok2 := arch.Regs["flags"]
	ipOff, ok3 := arch.Regs["ip"]
	if !ok1 || !ok2 || !ok3 || arch.Name != "x86_64" {
		return nil, fmt.Errorf("the function tracer needs x86_64's registers (this kernel is %s): %w", arch.Name, ebpf.ErrNotSupported)
	}
	ipAdjust := int32(-1)
	if multi {
		ipAdjust = -5 // the 5-byte call to the ftrace trampoline
	}
	c := st.cpuContext(true)
	// With the context read, ktrace's own calls are told from the
	// interrupts that came upon its threads once the record has it.
	insns := tracedTask(pids, noPids, c == nil)
	if st.tracing != nil {
		insns = append(insns, switchWord(st.tracing, "reserve")...)
		insns = append(insns, asm.JEq.Imm(asm.R1, 0, "out"))
	}
	reserve := ringRecord(st.ring, staticHeader+funcRecord, funcNum, asm.R7)
	reserve[0] = reserve[0].WithSymbol("reserve")
	insns = append(insns, reserve...)
	insns = append(insns,
		asm.StoreImm(asm.R7, 12, 0, asm.Word),
		// The function's ftrace location (after an ENDBR64), which the
		// kernel's function tracer records: a kprobe-multi entry's
		// instruction pointer is past the 5-byte call there, a
		// kprobe's one byte past it.
		asm.LoadMem(asm.R1, asm.R6, int16(ipOff), asm.DWord),
		asm.Add.Imm(asm.R1, ipAdjust),
		asm.StoreMem(asm.R7, staticHeader, asm.R1, asm.DWord),
		// The caller: the return address the call left at the stack
		// pointer of the function's entry.
		asm.Mov.Reg(asm.R1, asm.R7),
		asm.Add.Imm(asm.R1, staticHeader+8),
		asm.Mov.Imm(asm.R2, 8),
		asm.LoadMem(asm.R3, asm.R6, int16(spOff), asm.DWord),
		asm.FnProbeReadKernel.Call(),
		// TRACE_FLAG_IRQS_OFF when EFLAGS.IF (bit 9) is clear.
		asm.LoadMem(asm.R1, asm.R6, int16(flagsOff), asm.DWord),
		asm.RSh.Imm(asm.R1, 9),
		asm.And.Imm(asm.R1, 1),
		asm.Xor.Imm(asm.R1, 1),
		asm.StoreMem(asm.R7, staticHeader+16, asm.R1, asm.DWord),
	)
	if c != nil {
		// The rest of the context, as function_trace_call takes it
		// (tracing_gen_ctx_dec, under the recursion lock's preempt
		// disable, which the probe's path has too): the flags byte and
		// the depth after it.
		ctx, err := bpfcode.ContextAt(c, arch, staticHeader+16)
		if err != nil {
			return nil, err
		}
		insns = append(insns,
			asm.StoreMem(asm.R10, -72, asm.R8, asm.DWord),
			asm.LoadMem(asm.R1, asm.R7, 8, asm.Word),
			asm.StoreMem(asm.R10, -80, asm.R1, asm.Word),
		)
		insns = append(insns, ctx...)
		insns = append(insns,
			asm.LoadMem(asm.R8, asm.R10, -72, asm.DWord),
			// ktrace's own call in task context: no record (in a
			// hardirq, a softirq or an NMI it is not ktrace's doing).
			asm.Mov.Reg(asm.R1, asm.R8),
			asm.RSh.Imm(asm.R1, 32),
			asm.JNE.Imm(asm.R1, int32(os.Getpid()), "keep"),
			asm.LoadMem(asm.R1, asm.R7, staticHeader+16, asm.Byte),
			asm.And.Imm(asm.R1, bpfcode.InterruptFlags),
			asm.JNE.Imm(asm.R1, 0, "keep"),
			asm.Mov.Reg(asm.R1, asm.R7),
			asm.Mov.Imm(asm.R2, 0),
			asm.FnRingbufDiscard.Call(),
			asm.Ja.Label("out"),
			asm.Mov.Imm(asm.R0, 0).WithSymbol("keep"),
		)
	}
	insns = append(insns,
		asm.Mov.Reg(asm.R1, asm.R7),
		asm.Mov.Imm(asm.R2, 1), // BPF_RB_NO_WAKEUP: the reader polls
		asm.FnRingbufSubmit.Call(),
	)
	if stack {
		insns = append(insns, stackRecord(st.ring, funcStackNum)...)
	}
	insns = append(insns,
		asm.Mov.Imm(asm.R0, 0).WithSymbol("out"),
		asm.Return(),
	)
	return loadKprobe("ktrace_func", insns, multi, "the function tracer's program")
}

// tracedTask is the start of the function tracers' programs: the
// context kept in r6, the task's pid_tgid in r8 and its pid at -8, and
// to "out" unless the task is traced (not ktrace itself when notSelf,
// in pids when there are some, not in noPids).
func tracedTask(pids, noPids *ebpf.Map, notSelf bool) asm.Instructions {
	insns := asm.Instructions{
		asm.Mov.Reg(asm.R6, asm.R1),
		asm.FnGetCurrentPidTgid.Call(),
		asm.Mov.Reg(asm.R8, asm.R0),
	}
	if notSelf {
		insns = append(insns,
			asm.RSh.Imm(asm.R0, 32),
			asm.JEq.Imm(asm.R0, int32(os.Getpid()), "out"),
		)
	}
	insns = append(insns, asm.StoreMem(asm.R10, -8, asm.R8, asm.Word))
	if pids != nil {
		insns = append(insns, mapLookup(pids, -8)...)
		insns = append(insns, asm.JEq.Imm(asm.R0, 0, "out"))
	}
	if noPids != nil {
		insns = append(insns, mapLookup(noPids, -8)...)
		insns = append(insns, asm.JNE.Imm(asm.R0, 0, "out"))
	}
	return insns
}

// loadKprobe loads a kprobe program, for kprobe-multi links when multi.
func loadKprobe(name string, insns asm.Instructions, multi bool, what string) (*ebpf.Program, error) {
	spec := &ebpf.ProgramSpec{Name: name, Type: ebpf.Kprobe, License: "GPL", Instructions: insns}
	if multi {
		spec.AttachType = ebpf.AttachTraceKprobeMulti
	}
	prog, err := ebpf.NewProgram(spec)
	if err != nil {
		return nil, fmt.Errorf("loading %s: %w", what, err)
	}
	return prog, nil
}

// funcLast is the last function entry of a CPU and how often it came
// again since (func-no-repeats).
type funcLast struct {
	ip, parent uint64
	ts         uint64 // the time of its last repeat
	count      int
}

// funcEntry passes one function entry to the trace. Under the
// func-no-repeats option an entry equal to the CPU's last one (function
// and caller) is counted instead, and the count goes to the trace, as a
// "(repeats: N, last_ts: TS)" entry of the last function, before the
// next entry that differs (the kernel's func_repeats event).
func (b *Backend) funcEntry(line []byte, cpu uint32, ts uint64, pid int, comm string, r []byte) []byte {
	ip := binary.LittleEndian.Uint64(r[0:])
	parent := binary.LittleEndian.Uint64(r[8:])
	o := b.funcOpts()
	noRepeats := b.optionOn("func-no-repeats", false)
	b.fnMu.Lock()
	if b.fnLast == nil {
		b.fnLast = map[uint32]*funcLast{}
	}
	last := b.fnLast[cpu]
	if noRepeats && last != nil && last.ip == ip && last.parent == parent && last.count < 0xffff {
		last.count++
		last.ts = ts
		b.fnMu.Unlock()
		return line
	}
	var rep funcLast
	if noRepeats && last != nil && last.count > 0 {
		rep = *last
	}
	b.fnLast[cpu] = &funcLast{ip: ip, parent: parent, ts: ts}
	b.fnMu.Unlock()
	if rep.count > 0 {
		line = appendFuncContext(line[:0], cpu, ts, r[16], r[17])
		line = b.appendFuncName(line, rep.ip, rep.parent, o)
		line = fmt.Appendf(line, " (repeats: %d, last_ts: %5d.%06d)", rep.count, rep.ts/1e9, rep.ts%1e9/1e3)
		b.Record(ts, pid, comm, line)
	}
	line = b.funcEntryText(line[:0], cpu, ts, r, o)
	b.Record(ts, pid, comm, line)
	return line
}

// funcTextOpts are the trace options a function entry's text depends on,
// read once per entry.
type funcTextOpts struct{ parent, offset, addr bool }

func (b *Backend) funcOpts() funcTextOpts {
	return funcTextOpts{
		parent: b.optionOn("print-parent", true),
		offset: b.optionOn("sym-offset", false),
		addr:   b.optionOn("sym-addr", false),
	}
}

// funcEntryText appends a function entry's text: the function, and its
// caller under the print-parent option, each as seq_print_ip_sym prints
// it (sym-offset and sym-addr options).
func (b *Backend) funcEntryText(line []byte, cpu uint32, ts uint64, r []byte, o funcTextOpts) []byte {
	ip := binary.LittleEndian.Uint64(r[0:])
	parent := binary.LittleEndian.Uint64(r[8:])
	line = appendFuncContext(line, cpu, ts, r[16], r[17])
	return b.appendFuncName(line, ip, parent, o)
}

// appendFuncName is print_fn_trace: the function, and its caller under
// the print-parent option.
func (b *Backend) appendFuncName(line []byte, ip, parent uint64, o funcTextOpts) []byte {
	line = b.appendIPSym(line, ip, o)
	if parent != 0 && o.parent {
		line = append(line, " <-"...)
		line = b.appendIPSym(line, parent, o)
	}
	return line
}

// optionOn reads a trace option, def when the FS gives none.
func (b *Backend) optionOn(name string, def bool) bool {
	if b.TraceOptions == nil {
		return def
	}
	return b.TraceOptions.OptionOn(name)
}

// appendIPSym is seq_print_ip_sym: the symbol (with +OFF/SIZE and
// module under sym-offset), or the address as 0x%08lx when no symbol
// covers it; under sym-addr the address follows in angle brackets.
func (b *Backend) appendIPSym(line []byte, ip uint64, o funcTextOpts) []byte {
	if ip == 0 {
		return append(line, '0')
	}
	var s kernel.Symbol
	found := false
	if b.model != nil {
		s, found = b.model.LookupAddr(ip)
	}
	switch {
	case !found:
		line = fmt.Appendf(line, "0x%08x", ip)
	case o.offset:
		line = fmt.Appendf(line, "%s+0x%x/0x%x", s.Name, ip-s.Addr, s.Size)
		if s.Module != "" {
			line = fmt.Appendf(line, " [%s]", s.Module)
		}
	default:
		line = append(line, s.Name...)
	}
	if o.addr {
		line = fmt.Appendf(line, " <%016x>", ip)
	}
	return line
}

// appendFuncContext is the CPU, flags and time columns of a function
// entry.
func appendFuncContext(b []byte, cpu uint32, ts uint64, flags, preempt uint8) []byte {
	return appendStaticContextFlags(b, cpu, ts, flags, preempt)
}

// mapLookup looks up the map's element whose key is at slot on the
// stack; r0 is the value's address or 0.
func mapLookup(m *ebpf.Map, slot int16) asm.Instructions {
	return asm.Instructions{
		asm.LoadMapPtr(asm.R1, m.FD()),
		asm.Mov.Reg(asm.R2, asm.R10),
		asm.Add.Imm(asm.R2, int32(slot)),
		asm.FnMapLookupElem.Call(),
	}
}

// mapUpdate sets the map's element whose key is at stack slot key to the
// value at slot value.
func mapUpdate(m *ebpf.Map, key, value int16) asm.Instructions {
	return asm.Instructions{
		asm.LoadMapPtr(asm.R1, m.FD()),
		asm.Mov.Reg(asm.R2, asm.R10),
		asm.Add.Imm(asm.R2, int32(key)),
		asm.Mov.Reg(asm.R3, asm.R10),
		asm.Add.Imm(asm.R3, int32(value)),
		asm.Mov.Imm(asm.R4, 0),
		asm.FnMapUpdateElem.Call(),
	}
}

// switchWord loads a switch's word (an ARRAY of one u32: tracing_on, an
// event's trace switch) into r1, its address in r0; to none when the map
// has no element. The stack slot at -16 holds its key.
func switchWord(m *ebpf.Map, none string) asm.Instructions {
	insns := asm.Instructions{asm.StoreImm(asm.R10, -16, 0, asm.Word)}
	insns = append(insns, mapLookup(m, -16)...)
	return append(insns,
		asm.JEq.Imm(asm.R0, 0, none),
		asm.LoadMem(asm.R1, asm.R0, 0, asm.Word),
	)
}

// stackRecord writes the task's kernel stack into ring as a record of
// number num (the static events' header, the stack's size in bytes where
// a static record has its read's result, then the frames). r8 holds the
// task's pid_tgid; r6, r8 and r10 are kept.
func stackRecord(ring *ebpf.Map, num uint32) asm.Instructions {
	insns := ringRecord(ring, bpfcode.StackRecordSize, num, asm.R9)
	return append(insns,
		asm.FnGetCurrentTaskBtf.Call(),
		asm.Mov.Reg(asm.R1, asm.R0),
		asm.Mov.Reg(asm.R2, asm.R9),
		asm.Add.Imm(asm.R2, bpfcode.SynthHeader),
		asm.Mov.Imm(asm.R3, 8*bpfcode.StackFrames),
		asm.Mov.Imm(asm.R4, 0),
		asm.FnGetTaskStack.Call(),
		asm.StoreMem(asm.R9, 12, asm.R0, asm.Word),
		asm.Mov.Reg(asm.R1, asm.R9),
		asm.Mov.Imm(asm.R2, 1), // BPF_RB_NO_WAKEUP: the reader polls
		asm.FnRingbufSubmit.Call(),
	)
}

// ringRecord reserves size bytes of ring (to out when it is full), the
// record's address in rec, and writes the static events' header: time,
// CPU, number num, the task's pid (from r8's pid_tgid) and comm.
func ringRecord(ring *ebpf.Map, size int32, num uint32, rec asm.Register) asm.Instructions {
	return asm.Instructions{
		asm.LoadMapPtr(asm.R1, ring.FD()),
		asm.Mov.Imm(asm.R2, size),
		asm.Mov.Imm(asm.R3, 0),
		asm.FnRingbufReserve.Call(),
		asm.JEq.Imm(asm.R0, 0, "out"),
		asm.Mov.Reg(rec, asm.R0),
		asm.FnKtimeGetNs.Call(),
		asm.StoreMem(rec, 0, asm.R0, asm.DWord),
		asm.FnGetSmpProcessorId.Call(),
		asm.StoreMem(rec, 8, asm.R0, asm.Word),
		asm.StoreImm(rec, 32, int64(int32(num)), asm.Word),
		asm.StoreMem(rec, 36, asm.R8, asm.Word),
		asm.Mov.Reg(asm.R1, rec),
		asm.Add.Imm(asm.R1, 16),
		asm.Mov.Imm(asm.R2, 16),
		asm.FnGetCurrentComm.Call(),
	}
}

// probeHandlers are the kernel functions that run a BPF program at a
// function's entry: the frames up to the last of them are the probe
// machinery's; the next is the ftrace trampoline that called it.
var probeHandlers = map[string]bool{
	"fprobe_handler": true, "kprobe_ftrace_handler": true,
	"kprobe_int3_handler": true, "kprobe_perf_func": true,
}

// appendFuncStack appends a stack the function tracer or a stacktrace
// command wrote: "<stack trace>" and a " => FRAME" line per frame, from
// the ftrace trampoline on. The kernel's function tracer (func_stack_trace)
// names the trampoline [FTRACE TRAMPOLINE] on 6.12; elsewhere it prints
// as an address.
func (b *Backend) appendFuncStack(line, raw []byte, num uint32) []byte {
	size := int32(binary.LittleEndian.Uint32(raw[12:]))
	var pcs []uint64
	if size > 0 {
		pcs = stackPCs(raw, 0, int(size)/8, bpfcode.StackFrames)
	}
	frames := make([]tracer.Frame, len(pcs))
	first := 0
	for i, pc := range pcs {
		frames[i].PC = pc
		if b.model != nil {
			if s, ok := b.model.LookupAddr(pc); ok {
				frames[i] = tracer.Frame{PC: pc, Name: s.Name, Off: pc - s.Addr, Size: s.Size, Module: s.Module}
			}
		}
		if probeHandlers[frames[i].Name] {
			first = i + 1
		}
	}
	offset := b.optionOn("sym-offset", false)
	line = append(line, "<stack trace>"...)
	for i := first; i < len(frames); i++ {
		line = append(line, "\n => "...)
		if i == first && frames[i].Name == "" && num == funcStackNum && b.model != nil && strings.HasPrefix(b.model.Release(), "6.12") {
			line = append(line, "[FTRACE TRAMPOLINE]"...)
			continue
		}
		line = append(line, frames[i].Text(offset)...)
	}
	return line
}
