package live

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"

	"github.com/ktrace-dev/ktrace/kernel"
	"github.com/ktrace-dev/ktrace/tracefs"
)

// The function_graph tracer: a program at the entry of every selected
// function and one at its return. The entry's program counts the task's
// depth (how many traced functions it is in) and keeps the entry's time
// under the task and that depth; the return's program takes both back.
// Each writes a record into the static events' ring (graphEntNum,
// graphRetNum) with the function's address (the attach cookie) and the
// depth, a return also with its entry's time; tracefs prints them when
// the trace is read (tracefs.GraphRecord). A task's calls entered
// before the tracer started have no depth counted, and their returns are
// not recorded, as the kernel's return hook is never set on them.

// Numbers of the graph records in the static events' ring.
const (
	graphEntNum = ^uint32(0) - 4
	graphRetNum = ^uint32(0) - 5
)

// graphRecord is the size of a graph record after the static header: the
// function's address, the depth, and a return's entry time.
const graphRecord = 24

// graphTasks bounds how many tasks the tracer follows at once.
const graphTasks = 1 << 15

// graphMaxDepth is how deep a task's traced calls are followed (the
// kernel's shadow stack holds about as many).
const graphMaxDepth = 64

// graphTracer is the function_graph tracer's programs and maps: state
// holds each task's graphState, times its calls' entry times, conf the
// settings (graphConf) and flags the graph flags of the selected
// functions (set_graph_function, set_graph_notrace), by address.
type graphTracer struct {
	state, times, conf, flags *ebpf.Map
	progs                     []*ebpf.Program
}

// A task's state (the state map's value, 16 bytes): its depth of traced
// calls, the depth plus one at which its set_graph_function call started
// (0: outside one), and how many skipped calls it is in.
const (
	gstDepth = 0
	gstBase  = 4
	gstSkip  = 8
)

// The graph flags of a function.
const (
	graphFunction = 1 // in set_graph_function
	graphNotrace  = 2 // in set_graph_notrace
)

func (g *graphTracer) close() {
	for _, p := range g.progs {
		p.Close()
	}
	for _, m := range []*ebpf.Map{g.state, g.times, g.conf, g.flags} {
		if m != nil {
			m.Close()
		}
	}
}

// setConf puts t's graph settings in the maps, for the functions
// selected (funcs): the programs use them from their next hit.
func (g *graphTracer) setConf(t *tracefs.FunctionTrace, funcs []kernel.FtraceRecord) error {
	flags := map[uint64]uint32{}
	for _, a := range t.GraphFuncs {
		flags[a] |= graphFunction
	}
	for _, a := range t.GraphNotrace {
		flags[a] |= graphNotrace
	}
	for _, r := range funcs {
		if err := g.flags.Put(r.Addr, flags[r.Addr]); err != nil {
			return fmt.Errorf("setting the graph flags: %w", err)
		}
	}
	hasGraph := uint32(0)
	if len(t.GraphFuncs) > 0 {
		hasGraph = 1
	}
	if err := g.conf.Put(uint32(0), [2]uint32{t.MaxGraphDepth, hasGraph}); err != nil {
		return fmt.Errorf("setting max_graph_depth: %w", err)
	}
	return nil
}

// attachGraph loads and attaches the graph tracer's programs to funcs
// (cookies: their addresses), adding the links to ft.
func (b *Backend) attachGraph(st *staticTracer, ft *funcTracer, t *tracefs.FunctionTrace, funcs []kernel.FtraceRecord, cookies []uint64, pids, noPids *ebpf.Map) error {
	g := &graphTracer{}
	ft.graph = g
	var err error
	if g.state, err = ebpf.NewMap(&ebpf.MapSpec{Name: "ktrace_gstate", Type: ebpf.Hash, KeySize: 4, ValueSize: 16, MaxEntries: graphTasks}); err != nil {
		return fmt.Errorf("creating the task state map: %w", err)
	}
	if g.times, err = ebpf.NewMap(&ebpf.MapSpec{Name: "ktrace_gtimes", Type: ebpf.LRUHash, KeySize: 8, ValueSize: 8, MaxEntries: graphTasks * 4}); err != nil {
		return fmt.Errorf("creating the entry time map: %w", err)
	}
	if g.conf, err = ebpf.NewMap(&ebpf.MapSpec{Name: "ktrace_gconf", Type: ebpf.Array, KeySize: 4, ValueSize: 8, MaxEntries: 1}); err != nil {
		return fmt.Errorf("creating the settings map: %w", err)
	}
	if g.flags, err = ebpf.NewMap(&ebpf.MapSpec{Name: "ktrace_gflags", Type: ebpf.Hash, KeySize: 8, ValueSize: 4, MaxEntries: uint32(len(funcs))}); err != nil {
		return fmt.Errorf("creating the graph flags map: %w", err)
	}
	if err := g.setConf(t, funcs); err != nil {
		return err
	}
	if len(funcs) <= graphTrampolineMax {
		links, progs, err := graphTrampolines(st, g, funcs, pids, noPids)
		if err == nil {
			g.progs = append(g.progs, progs...)
			ft.links = append(ft.links, links...)
			return nil
		}
		if b.warn != nil {
			fmt.Fprintf(b.warn, "ktrace: function_graph: BPF trampolines refused (%v); kprobes are used, whose returns are lost when more calls than their pool holds are under way\n", err)
		}
	}
	// The returns first: a call entered once the entries are attached
	// then always has its return seen (a return with no entry counted is
	// left out).
	ret, rlinks, err := b.attachReturns(funcs, cookies, func(multi bool) (*ebpf.Program, error) {
		return graphProgram(st, g, pids, noPids, multi, true)
	})
	if err != nil {
		return err
	}
	g.progs = append(g.progs, ret)
	ft.links = append(ft.links, rlinks...)
	entry, links, _, err := b.attachEntries(funcs, cookies, func(multi bool) (*ebpf.Program, error) {
		return graphProgram(st, g, pids, noPids, multi, false)
	})
	if err != nil {
		return err
	}
	g.progs = append(g.progs, entry)
	// Detached in order: the entries go first.
	ft.links = append(links, ft.links...)
	if len(links) == 0 {
		return fmt.Errorf("no kprobe could be attached to the %d functions selected: %w", len(funcs), errTooMany)
	}
	return nil
}

// graphTrampolineMax is the largest selection the tracer attaches BPF
// trampolines to (an fentry and an fexit program per function). A
// trampoline keeps its return hook on the task's stack, as the kernel's
// graph tracer does, so no return is lost however many calls sleep in
// the function (schedule); a kprobe return has a fixed pool of return
// hooks (a kprobe-multi link's is twice its functions times the CPUs,
// a kretprobe's ten). Larger selections use kprobes: loading two
// programs per function would take too long.
const graphTrampolineMax = 64

// graphTrampolines attaches an fexit then an fentry program to each
// function (vmlinux's; a module's function is refused), all or none.
func graphTrampolines(st *staticTracer, g *graphTracer, funcs []kernel.FtraceRecord, pids, noPids *ebpf.Map) (links []link.Link, progs []*ebpf.Program, err error) {
	defer func() {
		if err != nil {
			closeLinks(links)
			for _, p := range progs {
				p.Close()
			}
			links, progs = nil, nil
		}
	}()
	var entries []link.Link
	for _, f := range funcs {
		if f.Module != "" {
			return links, progs, fmt.Errorf("%s is a module's function", f.Name)
		}
		for _, ret := range []bool{true, false} {
			at, name := ebpf.AttachTraceFEntry, "ktrace_gfent"
			if ret {
				at, name = ebpf.AttachTraceFExit, "ktrace_gfexit"
			}
			prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{Name: name, Type: ebpf.Tracing, AttachType: at, AttachTo: f.Name,
				License: "GPL", Instructions: graphInsns(st, g, pids, noPids, ret, f.Addr)})
			if err != nil {
				return links, progs, fmt.Errorf("%s: %w", f.Name, err)
			}
			progs = append(progs, prog)
			l, err := link.AttachTracing(link.TracingOptions{Program: prog})
			if err != nil {
				return links, progs, fmt.Errorf("%s: %w", f.Name, err)
			}
			if ret {
				links = append(links, l)
			} else {
				entries = append(entries, l)
			}
		}
	}
	// The entries are detached first.
	return append(entries, links...), progs, nil
}

// attachReturns attaches a return program to funcs: one kprobe-multi
// return link where the kernel has them, else a kretprobe per function.
func (b *Backend) attachReturns(funcs []kernel.FtraceRecord, cookies []uint64, load func(multi bool) (*ebpf.Program, error)) (*ebpf.Program, []link.Link, error) {
	if b.model.Config("CONFIG_FPROBE") != "n" {
		prog, err := load(true)
		if err != nil {
			return nil, nil, err
		}
		addrs := make([]uintptr, len(funcs))
		for i, r := range funcs {
			addrs[i] = uintptr(r.Addr)
		}
		l, err := link.KretprobeMulti(prog, link.KprobeMultiOptions{Addresses: addrs, Cookies: cookies})
		if err == nil {
			return prog, []link.Link{l}, nil
		}
		prog.Close()
		if !errors.Is(err, ebpf.ErrNotSupported) {
			return nil, nil, fmt.Errorf("attaching a kprobe-multi return link: %w", err)
		}
	}
	if len(funcs) > funcKprobeMax {
		return nil, nil, fmt.Errorf("without kprobe-multi links (fprobe) each function needs a kretprobe of its own, and ktrace attaches at most %d; narrow set_ftrace_filter: %w", funcKprobeMax, errTooMany)
	}
	prog, err := load(false)
	if err != nil {
		return nil, nil, err
	}
	all := make([]link.Link, len(funcs))
	errs := make([]error, len(funcs))
	parallel(len(funcs), func(i int) {
		all[i], errs[i] = link.Kretprobe(funcs[i].Name, prog, &link.KprobeOptions{Cookie: cookies[i]})
	})
	var links []link.Link
	for i := range funcs {
		if errs[i] == nil {
			links = append(links, all[i])
		}
	}
	return prog, links, nil
}

// graphProgram is the entry program, or with ret the return program, of
// the graph tracer.
func graphProgram(st *staticTracer, g *graphTracer, pids, noPids *ebpf.Map, multi, ret bool) (*ebpf.Program, error) {
	name, what := "ktrace_gent", "the function_graph tracer's entry program"
	if ret {
		name, what = "ktrace_gret", "the function_graph tracer's return program"
	}
	return loadKprobe(name, graphInsns(st, g, pids, noPids, ret, 0), multi, what)
}

// The graph tracer's stack slots: -8 the pid (tracedTask), -16 the time
// key (the pid and the depth), -24 the time, -32 the settings' key, -40
// the function's address, -44 max_graph_depth, -48 whether
// set_graph_function selects any function, -52 the function's graph
// flags, -72 a zero task state.
const (
	gsConfKey  = -32
	gsAddr     = -40
	gsMax      = -44
	gsHasGraph = -48
	gsFlags    = -52
	gsZero     = -72
)

// graphInsns is the program of graphProgram; addr, when not 0, is the
// function's address (a trampoline program has no attach cookie).
//
// The task's state (graphState) decides, as the kernel's return stack
// does, which calls are traced: an entry is skipped (and so is
// everything it calls, each counted in skip so that its return is
// skipped too) when its function is in set_graph_notrace or when the
// task is max_graph_depth traced calls deep; with set_graph_function
// selecting functions, an entry is traced only inside a call of one of
// them (base: the depth that call started at, plus one), and the other
// calls are not counted at all.
func graphInsns(st *staticTracer, g *graphTracer, pids, noPids *ebpf.Map, ret bool, addr uint64) asm.Instructions {
	insns := tracedTask(pids, noPids, true)
	if addr != 0 {
		insns = append(insns, asm.LoadImm(asm.R0, int64(addr), asm.DWord))
	} else {
		insns = append(insns,
			asm.Mov.Reg(asm.R1, asm.R6),
			asm.FnGetAttachCookie.Call(),
		)
	}
	insns = append(insns,
		asm.StoreMem(asm.R10, gsAddr, asm.R0, asm.DWord),
		asm.StoreImm(asm.R10, gsConfKey, 0, asm.Word),
	)
	insns = append(insns, mapLookup(g.conf, gsConfKey)...)
	insns = append(insns,
		asm.JEq.Imm(asm.R0, 0, "out"),
		asm.LoadMem(asm.R1, asm.R0, 0, asm.Word),
		asm.StoreMem(asm.R10, gsMax, asm.R1, asm.Word),
		asm.LoadMem(asm.R1, asm.R0, 4, asm.Word),
		asm.StoreMem(asm.R10, gsHasGraph, asm.R1, asm.Word),
		asm.StoreImm(asm.R10, gsFlags, 0, asm.Word),
	)
	if !ret {
		insns = append(insns, mapLookup(g.flags, gsAddr)...)
		insns = append(insns,
			asm.JEq.Imm(asm.R0, 0, "flagged"),
			asm.LoadMem(asm.R1, asm.R0, 0, asm.Word),
			asm.StoreMem(asm.R10, gsFlags, asm.R1, asm.Word),
		)
	}
	// r7: the task's state.
	insns = append(insns, mapLookup(g.state, -8)...)
	insns[len(insns)-4] = insns[len(insns)-4].WithSymbol("flagged")
	if ret {
		insns = append(insns,
			asm.JEq.Imm(asm.R0, 0, "out"),
			asm.Mov.Reg(asm.R7, asm.R0),
			// A call skipped at its entry.
			asm.LoadMem(asm.R1, asm.R7, gstSkip, asm.Word),
			asm.JEq.Imm(asm.R1, 0, "counted"),
			asm.Sub.Imm(asm.R1, 1),
			asm.StoreMem(asm.R7, gstSkip, asm.R1, asm.Word),
			asm.Ja.Label("out"),
			// Outside set_graph_function's calls nothing was counted.
			asm.LoadMem(asm.R2, asm.R7, gstBase, asm.Word).WithSymbol("counted"),
			asm.LoadMem(asm.R3, asm.R10, gsHasGraph, asm.Word),
			asm.JEq.Imm(asm.R3, 0, "inside"),
			asm.JEq.Imm(asm.R2, 0, "out"),
			// r9: the depth of this call.
			asm.LoadMem(asm.R9, asm.R7, gstDepth, asm.Word).WithSymbol("inside"),
			asm.JEq.Imm(asm.R9, 0, "out"),
			asm.Sub.Imm(asm.R9, 1),
			asm.StoreMem(asm.R7, gstDepth, asm.R9, asm.Word),
			// The return of the set_graph_function call leaves it.
			asm.Mov.Reg(asm.R1, asm.R9),
			asm.Add.Imm(asm.R1, 1),
			asm.JNE.Reg(asm.R1, asm.R2, "timekey"),
			asm.StoreImm(asm.R7, gstBase, 0, asm.Word),
		)
	} else {
		insns = append(insns,
			asm.JNE.Imm(asm.R0, 0, "state"),
			asm.Mov.Imm(asm.R1, 0),
			asm.StoreMem(asm.R10, gsZero, asm.R1, asm.DWord),
			asm.StoreMem(asm.R10, gsZero+8, asm.R1, asm.DWord),
		)
		insns = append(insns, mapUpdate(g.state, -8, gsZero)...)
		insns = append(insns, mapLookup(g.state, -8)...)
		insns = append(insns,
			asm.JEq.Imm(asm.R0, 0, "out"),
			asm.Mov.Reg(asm.R7, asm.R0).WithSymbol("state"),
			// Inside a skipped call, or a set_graph_notrace
			// function: skipped.
			asm.LoadMem(asm.R1, asm.R7, gstSkip, asm.Word),
			asm.JNE.Imm(asm.R1, 0, "skip"),
			asm.LoadMem(asm.R1, asm.R10, gsFlags, asm.Word),
			asm.Mov.Reg(asm.R2, asm.R1),
			asm.And.Imm(asm.R2, graphNotrace),
			asm.JNE.Imm(asm.R2, 0, "skip"),
			// r4: this call starts a set_graph_function call.
			asm.Mov.Imm(asm.R4, 0),
			asm.LoadMem(asm.R2, asm.R7, gstBase, asm.Word),
			asm.JNE.Imm(asm.R2, 0, "inside"),
			asm.LoadMem(asm.R3, asm.R10, gsHasGraph, asm.Word),
			asm.JEq.Imm(asm.R3, 0, "inside"),
			asm.And.Imm(asm.R1, graphFunction),
			asm.JEq.Imm(asm.R1, 0, "out"),
			asm.Mov.Imm(asm.R4, 1),
			// r9: the task's depth before this call.
			asm.LoadMem(asm.R9, asm.R7, gstDepth, asm.Word).WithSymbol("inside"),
			asm.LoadMem(asm.R3, asm.R10, gsMax, asm.Word),
			asm.JEq.Imm(asm.R3, 0, "deep"),
			asm.JGE.Reg(asm.R9, asm.R3, "skip"),
			asm.JGE.Imm(asm.R9, graphMaxDepth, "skip").WithSymbol("deep"),
			asm.Mov.Reg(asm.R1, asm.R9),
			asm.Add.Imm(asm.R1, 1),
			asm.StoreMem(asm.R7, gstDepth, asm.R1, asm.Word),
			asm.JEq.Imm(asm.R4, 0, "timekey"),
			asm.StoreMem(asm.R7, gstBase, asm.R1, asm.Word),
			asm.Ja.Label("timekey"),
			asm.LoadMem(asm.R1, asm.R7, gstSkip, asm.Word).WithSymbol("skip"),
			asm.Add.Imm(asm.R1, 1),
			asm.StoreMem(asm.R7, gstSkip, asm.R1, asm.Word),
			asm.Ja.Label("out"),
		)
	}
	// The time key: pid << 32 | depth.
	insns = append(insns,
		asm.Mov.Reg(asm.R1, asm.R8).WithSymbol("timekey"),
		asm.LSh.Imm(asm.R1, 32),
		asm.Or.Reg(asm.R1, asm.R9),
		asm.StoreMem(asm.R10, -16, asm.R1, asm.DWord),
		asm.Mov.Imm(asm.R1, 0),
		asm.StoreMem(asm.R10, -24, asm.R1, asm.DWord),
	)
	if ret {
		insns = append(insns, mapLookup(g.times, -16)...)
		insns = append(insns,
			asm.JEq.Imm(asm.R0, 0, "timed"),
			asm.LoadMem(asm.R1, asm.R0, 0, asm.DWord),
			asm.StoreMem(asm.R10, -24, asm.R1, asm.DWord),
			asm.Mov.Imm(asm.R0, 0).WithSymbol("timed"),
		)
	} else {
		insns = append(insns,
			asm.FnKtimeGetNs.Call(),
			asm.StoreMem(asm.R10, -24, asm.R0, asm.DWord),
		)
		insns = append(insns, mapUpdate(g.times, -16, -24)...)
	}
	if st.tracing != nil {
		sw := switchWord(st.tracing, "reserve")
		// switchWord's key slot is -16, the time key's: the key is
		// used up by now, and the slot is rewritten below.
		insns = append(insns, sw...)
		insns = append(insns, asm.JEq.Imm(asm.R1, 0, "out"))
	}
	num := graphEntNum
	if ret {
		num = graphRetNum
	}
	reserve := ringRecord(st.ring, staticHeader+graphRecord, num, asm.R7)
	reserve[0] = reserve[0].WithSymbol("reserve")
	insns = append(insns, reserve...)
	insns = append(insns,
		asm.StoreImm(asm.R7, 12, 0, asm.Word),
		asm.LoadMem(asm.R0, asm.R10, gsAddr, asm.DWord),
		asm.StoreMem(asm.R7, staticHeader, asm.R0, asm.DWord),
		asm.StoreMem(asm.R7, staticHeader+8, asm.R9, asm.DWord),
		asm.LoadMem(asm.R1, asm.R10, -24, asm.DWord),
		asm.StoreMem(asm.R7, staticHeader+16, asm.R1, asm.DWord),
		asm.Mov.Reg(asm.R1, asm.R7),
		asm.Mov.Imm(asm.R2, 1), // BPF_RB_NO_WAKEUP: the reader polls
		asm.FnRingbufSubmit.Call(),
		asm.Mov.Imm(asm.R0, 0).WithSymbol("out"),
		asm.Return(),
	)
	return insns
}

// graphEntry passes one graph record (r after the static header) to the
// trace.
func (b *Backend) graphEntry(ret bool, cpu uint32, ts uint64, pid int, comm string, r []byte) {
	if b.RecordGraph == nil {
		return
	}
	addr := binary.LittleEndian.Uint64(r[0:])
	depth := int(binary.LittleEndian.Uint64(r[8:]))
	rec := tracefs.GraphRecord{Return: ret, CPU: int(cpu), Pid: pid, Comm: comm, Depth: depth, TS: ts}
	if ret {
		rec.CallTime = binary.LittleEndian.Uint64(r[16:])
		if rec.CallTime == 0 || rec.CallTime > ts {
			// The entry's time was lost: no duration.
			rec.CallTime = ts
		}
	}
	rec.Func, rec.IRQ = b.graphFunc(addr)
	b.RecordGraph(rec)
}

// graphFunc names the function at addr as %ps does, and says whether it
// is an interrupt entry (in __irqentry_text).
func (b *Backend) graphFunc(addr uint64) (string, bool) {
	if b.model == nil {
		return fmt.Sprintf("0x%x", addr), false
	}
	s, ok := b.model.LookupAddr(addr)
	if !ok {
		return fmt.Sprintf("0x%x", addr), false
	}
	b.irqOnce.Do(func() {
		start, ok1 := b.model.LookupName("__irqentry_text_start")
		end, ok2 := b.model.LookupName("__irqentry_text_end")
		if ok1 && ok2 {
			b.irqStart, b.irqEnd = start, end
		}
	})
	return s.Name, addr >= b.irqStart && addr < b.irqEnd
}
