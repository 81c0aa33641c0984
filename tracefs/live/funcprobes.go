package live

import (
	"fmt"
	"os"
	"syscall"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"

	"github.com/ktrace-dev/ktrace/kernel"
	"github.com/ktrace-dev/ktrace/tracefs"
)

// Function commands (set_ftrace_filter's FUNC:COMMAND[:COUNT]) run as BPF
// programs on the entry of their functions: traceon and traceoff switch
// tracing_on, enable_event and disable_event their event's trace switch
// (the event is in soft mode meanwhile), as the kernel's probes do: only
// when the switch is not already where the command puts it, a count going
// down each time it acts; stacktrace writes the task's stack and snapshot
// asks for a snapshot, as the event triggers of those names do. The
// attach cookie is the entry's index, which also indexes the counts.
// dump and cpudump, which print the buffer to the console, ktrace does
// not run: their write fails with EINVAL, saying why on stderr.

var _ tracefs.FunctionProber = (*Backend)(nil)

// funcProbeRun is one command attached: its program, links and counts.
type funcProbeRun struct {
	fp    *tracefs.FunctionProbe
	progs []*ebpf.Program
	links []link.Link
	count *ebpf.Map // an ARRAY of one u64 per entry; nil: not counted
}

func (r *funcProbeRun) close() {
	closeLinks(r.links)
	for _, p := range r.progs {
		p.Close()
	}
	if r.count != nil {
		r.count.Close()
	}
}

// counts reads what is left of each entry's count.
func (r *funcProbeRun) counts() []int64 {
	out := make([]int64, len(r.fp.Entries))
	for i := range out {
		out[i] = r.fp.Entries[i].Count
		if r.count != nil {
			var v int64
			if r.count.Lookup(uint32(i), &v) == nil {
				out[i] = v
			}
		}
	}
	return out
}

// SetFunctionProbes attaches the commands in probes, in place of those
// attached before; what is left of a count carries over to the same
// command on the same function.
func (b *Backend) SetFunctionProbes(probes []*tracefs.FunctionProbe) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	left := map[string]int64{}
	for _, r := range b.fprobes {
		for i, c := range r.counts() {
			left[probeKey(r.fp, i)] = c
		}
	}
	// The events enable_event and disable_event switch get their
	// switches (soft mode) first.
	oldTargets := b.ftargets
	b.ftargets = map[evID]bool{}
	for _, p := range probes {
		if p.Command != "enable_event" && p.Command != "disable_event" {
			continue
		}
		for _, e := range p.Entries {
			if key, ok := b.targetKey(e.System, e.Event); ok {
				b.ftargets[key] = true
			}
		}
	}
	var runs []*funcProbeRun
	fail := func(err error) error {
		for _, r := range runs {
			r.close()
		}
		b.ftargets = oldTargets
		b.syncTargets()
		if b.warn != nil {
			fmt.Fprintf(b.warn, "ktrace: set_ftrace_filter: %v\n", err)
		}
		return attachErrno(err)
	}
	if err := b.syncTargets(); err != nil {
		return fail(err)
	}
	for _, p := range probes {
		r, err := b.attachFuncProbe(p, left)
		if err != nil {
			return fail(fmt.Errorf("%s: %w", p.Command, err))
		}
		runs = append(runs, r)
	}
	for _, r := range b.fprobes {
		r.close()
	}
	b.fprobes = runs
	// Events no command targets any more leave soft mode.
	return b.syncTargets()
}

// FunctionProbeCounts reads what is left of a command's counts.
func (b *Backend) FunctionProbeCounts(p *tracefs.FunctionProbe) []int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, r := range b.fprobes {
		if r.fp == p {
			return r.counts()
		}
	}
	return nil
}

func probeKey(p *tracefs.FunctionProbe, i int) string {
	return fmt.Sprintf("%s/%t/%x", p.Command, p.Counted, p.Entries[i].Func.Addr)
}

// probeAction is what a command's program does once its count allows:
// switch a map's word (tracing_on, an event's trace switch) to want,
// write the task's stack, or ask for a snapshot.
type probeAction struct {
	kind    string // "switch", "stack" or "snapshot"
	sw      *ebpf.Map
	want    int32
	entries []int // the entries it runs for
}

// probeActions splits a command's entries by what their program does
// (an enable_event or disable_event per target event). Called with mu
// held, after syncTargets gave the targets their switches.
func (b *Backend) probeActions(p *tracefs.FunctionProbe) ([]*probeAction, error) {
	all := make([]int, len(p.Entries))
	for i := range all {
		all[i] = i
	}
	switch p.Command {
	case "traceon", "traceoff":
		tracing, err := b.tracing()
		if err != nil {
			return nil, err
		}
		want := int32(0)
		if p.Command == "traceon" {
			want = 1
		}
		return []*probeAction{{kind: "switch", sw: tracing, want: want, entries: all}}, nil
	case "stacktrace":
		return []*probeAction{{kind: "stack", entries: all}}, nil
	case "snapshot":
		return []*probeAction{{kind: "snapshot", entries: all}}, nil
	case "enable_event", "disable_event":
		want := int32(0)
		if p.Command == "enable_event" {
			want = 1
		}
		byTarget := map[evID]*probeAction{}
		var out []*probeAction
		for i, e := range p.Entries {
			key, ok := b.targetKey(e.System, e.Event)
			if !ok {
				return nil, fmt.Errorf("%s: no event %s:%s: %w", p.Command, e.System, e.Event, syscall.EINVAL)
			}
			a := byTarget[key]
			if a == nil {
				sw := b.hists.switches[key]
				if sw == nil {
					return nil, fmt.Errorf("%s: the event %s:%s has no trace switch: %w", p.Command, e.System, e.Event, syscall.EINVAL)
				}
				a = &probeAction{kind: "switch", sw: sw, want: want}
				byTarget[key] = a
				out = append(out, a)
			}
			a.entries = append(a.entries, i)
		}
		return out, nil
	}
	return nil, fmt.Errorf("ktrace cannot run the %s function command (it prints the buffer to the console): %w", p.Command, syscall.EINVAL)
}

// targetKey names the event an enable_event or disable_event command
// switches.
func (b *Backend) targetKey(system, event string) (evID, bool) {
	if ev := b.R.Event(system, event); ev != nil {
		return evID{ev.Group, ev.Name, ev.Serial}, true
	}
	if b.staticEvent(system, event) != nil {
		return evID{system, event, staticSerial}, true
	}
	return evID{}, false
}

// attachFuncProbe loads and attaches one command: a program per action,
// each attached to the entries it runs for. Called with mu held.
func (b *Backend) attachFuncProbe(p *tracefs.FunctionProbe, left map[string]int64) (*funcProbeRun, error) {
	r := &funcProbeRun{fp: p}
	ok := false
	defer func() {
		if !ok {
			r.close()
		}
	}()
	actions, err := b.probeActions(p)
	if err != nil {
		return nil, err
	}
	if p.Counted {
		r.count, err = ebpf.NewMap(&ebpf.MapSpec{Name: "ktrace_fcount", Type: ebpf.Array, KeySize: 4, ValueSize: 8, MaxEntries: uint32(max(1, len(p.Entries)))})
		if err != nil {
			return nil, fmt.Errorf("creating the counts: %w", err)
		}
		for i, e := range p.Entries {
			c := e.Count
			if v, ok := left[probeKey(p, i)]; ok {
				c = v
			}
			if err := r.count.Put(uint32(i), c); err != nil {
				return nil, fmt.Errorf("setting a count: %w", err)
			}
		}
	}
	for _, a := range actions {
		if err := b.attachAction(r, p, a); err != nil {
			return nil, err
		}
	}
	ok = true
	return r, nil
}

// attachAction attaches one action's program to its entries' functions.
func (b *Backend) attachAction(r *funcProbeRun, p *tracefs.FunctionProbe, a *probeAction) error {
	var funcs []kernel.FtraceRecord
	var cookies []uint64
	for _, i := range a.entries {
		if e := p.Entries[i]; e.Func.Addr != 0 {
			funcs = append(funcs, e.Func)
			cookies = append(cookies, uint64(i))
		}
	}
	if len(funcs) == 0 {
		return nil
	}
	prog, links, refused, err := b.attachEntries(funcs, cookies, func(multi bool) (*ebpf.Program, error) {
		return b.actionProgram(a, r.count, multi)
	})
	if prog != nil {
		r.progs = append(r.progs, prog)
	}
	r.links = append(r.links, links...)
	if err != nil {
		return fmt.Errorf("%d functions: %w", len(funcs), err)
	}
	for i, e := range refused {
		if e != nil {
			return fmt.Errorf("attaching to %s: %w", funcs[i].Name, e)
		}
	}
	return nil
}

// actionProgram is a command's program: for a task other than ktrace,
// the entry's count (the attach cookie indexes it; 0 left does nothing,
// -1 never goes down), then the action. A switch acts only when its word
// is not already as wanted, and only then takes from the count (the
// kernel's traceon/traceoff and enable_event/disable_event probes); a
// stack is written while tracing is on, a snapshot asked for, each
// taking one from the count.
func (b *Backend) actionProgram(a *probeAction, count *ebpf.Map, multi bool) (*ebpf.Program, error) {
	insns := asm.Instructions{
		asm.Mov.Reg(asm.R6, asm.R1),
		asm.FnGetCurrentPidTgid.Call(),
		asm.Mov.Reg(asm.R8, asm.R0),
		asm.RSh.Imm(asm.R0, 32),
		asm.JEq.Imm(asm.R0, int32(os.Getpid()), "out"),
		asm.Mov.Reg(asm.R1, asm.R6),
		asm.FnGetAttachCookie.Call(),
		asm.StoreMem(asm.R10, -8, asm.R0, asm.Word),
		asm.Mov.Imm(asm.R7, 0),
	}
	if count != nil {
		insns = append(insns, mapLookup(count, -8)...)
		insns = append(insns,
			asm.JEq.Imm(asm.R0, 0, "out"),
			asm.Mov.Reg(asm.R7, asm.R0),
			asm.LoadMem(asm.R1, asm.R7, 0, asm.DWord),
			asm.JEq.Imm(asm.R1, 0, "out"),
		)
		if a.kind == "snapshot" {
			// ftrace_count_snapshot: a count at or below 0 does
			// nothing.
			insns = append(insns, asm.JSLT.Imm(asm.R1, 0, "out"))
		}
	}
	// take: one from the count (r7) when there is one.
	take := asm.Instructions{
		asm.JEq.Imm(asm.R7, 0, "taken"),
		asm.LoadMem(asm.R1, asm.R7, 0, asm.DWord),
		asm.JEq.Imm(asm.R1, -1, "taken"),
		asm.Add.Imm(asm.R1, -1),
		asm.StoreMem(asm.R7, 0, asm.R1, asm.DWord),
		asm.Mov.Imm(asm.R0, 0).WithSymbol("taken"),
	}
	switch a.kind {
	case "switch":
		insns = append(insns, switchWord(a.sw, "out")...)
		if a.want == 1 {
			insns = append(insns, asm.JNE.Imm(asm.R1, 0, "out"))
		} else {
			insns = append(insns, asm.JEq.Imm(asm.R1, 0, "out"))
		}
		insns = append(insns, asm.StoreImm(asm.R0, 0, int64(a.want), asm.Word))
		insns = append(insns, take...)
	case "stack":
		st, err := b.staticTracer()
		if err != nil {
			return nil, err
		}
		tracing, err := b.tracing()
		if err != nil {
			return nil, err
		}
		insns = append(insns, switchWord(tracing, "out")...)
		insns = append(insns, asm.JEq.Imm(asm.R1, 0, "out"))
		insns = append(insns, take...)
		insns = append(insns, stackRecord(st.ring, probeStackNum)...)
	case "snapshot":
		q, err := b.snapshotQueue()
		if err != nil {
			return nil, err
		}
		insns = append(insns, take...)
		insns = append(insns,
			asm.FnKtimeGetNs.Call(),
			asm.StoreMem(asm.R10, -48, asm.R0, asm.DWord),
			asm.StoreMem(asm.R10, -40, asm.R8, asm.Word),
			asm.FnGetSmpProcessorId.Call(),
			asm.StoreMem(asm.R10, -36, asm.R0, asm.Word),
			asm.Mov.Reg(asm.R1, asm.R10),
			asm.Add.Imm(asm.R1, -32),
			asm.Mov.Imm(asm.R2, 16),
			asm.FnGetCurrentComm.Call(),
			asm.LoadMapPtr(asm.R1, q.FD()),
			asm.Mov.Reg(asm.R2, asm.R10),
			asm.Add.Imm(asm.R2, -48),
			asm.Mov.Imm(asm.R3, 0),
			asm.FnMapPushElem.Call(),
		)
	}
	insns = append(insns,
		asm.Mov.Imm(asm.R0, 0).WithSymbol("out"),
		asm.Return(),
	)
	return loadKprobe("ktrace_fcmd", insns, multi, "the command's program")
}
