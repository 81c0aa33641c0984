package tracer

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"syscall"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"

	"github.com/ktrace-dev/ktrace/bpfcode"
	"github.com/ktrace-dev/ktrace/events"
	"github.com/ktrace-dev/ktrace/fetchargs"
	"github.com/ktrace-dev/ktrace/grammar"
	"github.com/ktrace-dev/ktrace/kernel"
)

// Probe is one compiled probe point: the event and probe it belongs to,
// its record layout and the eBPF programs (Entry is set only for return
// probes that save arguments at function entry).
type Probe struct {
	Index  uint32
	Event  *events.Event
	Probe  *events.Probe
	Layout *fetchargs.Layout
	Main   *ebpf.ProgramSpec
	Entry  *ebpf.ProgramSpec
	// Shared is the probe's program in the form several probes of the
	// same shape can share through one multi link (the attach cookie is
	// the probe's index, see bpfcode.ProbeProgram.Cookie); nil when the
	// probe cannot share. Probes whose Shared programs are equal share
	// one; ShareKey says which.
	Shared   *ebpf.ProgramSpec
	ShareKey string
	// Info is the probe's entry in the Probes map that shared programs
	// read.
	Info bpfcode.ProbeInfo
	// Source is set for an event probe on a dynamic event: the program
	// runs where the source's probe would and builds its record first.
	Source *Source
	// Inline is set for an event probe on a synthetic event, which has no
	// program to attach: the programs that generate the synthetic
	// event's records call this one on each (bpfcode.InlineProbe,
	// Group.InlineProbes). Main is then only compiled, to check it.
	Inline *bpfcode.InlineProbe
	// Hists and NoTrace are the event's histograms and soft mode
	// (bpfcode.ProbeProgram.Hists and NoTrace).
	Hists   []*bpfcode.Hist
	NoTrace bool
	// TraceSwitch is bpfcode.ProbeProgram.TraceSwitch (nil: none).
	TraceSwitch asm.FDer
	// Triggers and TracingOn are bpfcode.ProbeProgram's.
	Triggers  []*bpfcode.EventTrigger
	TracingOn asm.FDer
}

// Source is the dynamic event an event probe is attached to, at one of its
// probes, with that probe's record layout.
type Source struct {
	Event  *events.Event
	Probe  *events.Probe
	Layout *fetchargs.Layout
}

// sourceKinds are the dynamic events whose event probes are traced: the
// kinds whose programs build their record from their own context.
var sourceKinds = map[events.Kind]bool{events.Fentry: true, events.Fexit: true, events.Tprobe: true}

// kind is the kind of probe the program is attached as: the source's for
// an event probe on a dynamic event.
func (pr *Probe) kind() events.Kind {
	if pr.Source != nil {
		return pr.Source.Event.Kind
	}
	return pr.Event.Kind
}

// attachProbe is the probe whose place the program is attached at.
func (pr *Probe) attachProbe() *events.Probe {
	if pr.Source != nil {
		return pr.Source.Probe
	}
	return pr.Probe
}

// Plan is the set of probes of one tracing session with the sizes of the
// maps they share.
type Plan struct {
	Probes        []*Probe
	ScratchSize   int // value size of the scratch map
	EntryDataSize int // value size of the entry-data map (0: none)
	MaxRecord     int // largest ring buffer record, ktrace header included
	// RingSize is the ring buffer's size in bytes: the options' size
	// (when 0, one that holds a burst of BurstEvents of the largest
	// events), doubled until four of the largest records fit.
	RingSize int
	// WakeupBytes is the ring buffer fill level whose crossing wakes
	// the reader (bpfcode.ProbeProgram.WakeupBytes): an eighth of the
	// ring. Waking the reader for every record costs an interrupt and a
	// context switch per hit.
	WakeupBytes int
	PlanOptions
}

// PlanOptions are the choices a plan is built with; they do not change
// afterwards.
type PlanOptions struct {
	// RingSize is the ring buffer size asked for (0: the burst default).
	RingSize int
	// IgnoreTgid is a process whose hits are counted but not recorded
	// (bpfcode.ProbeProgram.IgnoreTgid; 0: none).
	IgnoreTgid uint32
	// OnlyPid is the process or thread whose hits alone are recorded
	// (bpfcode.ProbeProgram.OnlyPid; 0: all).
	OnlyPid uint32
	// Follow: the programs record only the processes of the follow map.
	Follow bool
	// Multi says that fprobes attach through kprobe-multi links, so that
	// fprobes of the same shape can share one program and one link.
	Multi bool
	// PlainKprobes keeps kprobe and kretprobe events off kprobe-multi
	// links (Config.PlainKprobes).
	PlainKprobes bool
	// FirstIndex is the index of the plan's first probe: probes attached
	// to a session later continue its numbering.
	FirstIndex uint32
	// Shared sizes the plan's maps for any probe rather than its own
	// (scratch and entry data at their largest, Capacity probes): a
	// session whose probes come and go keeps one set of maps.
	Shared   bool
	Capacity int
}

// The sizes of a shared plan's maps: the largest scratch value an
// instruction's 16-bit offsets reach, and entry data for every argument a
// probe may have.
const (
	maxScratch   = 1<<15 - 1
	maxEntryData = 8 * grammar.MaxTraceArgs
)

// ErrPending is wrapped when a probe cannot be traced because the kernel
// has it registered but not armed (module not loaded, unknown address).
var ErrPending = errors.New("probe is not armed")

// NewPlan computes the layouts of every probe of evs and the sizes of the
// maps; programs are compiled by Compile once the maps exist.
func NewPlan(evs []*events.Event, opts PlanOptions) (*Plan, error) {
	p := &Plan{PlanOptions: opts}
	burst := fetchargs.HeaderSize // bytes of the largest event in a burst
	for _, ev := range evs {
		probes := ev.Probes
		var src *events.Event
		if ev.Kind == events.Eprobe {
			// Event probes on the kernel's tracepoints, and on the
			// dynamic events of sourceKinds, are traced, their "if"
			// filters run by the program; the others are emulated
			// only.
			att := ev.Attached
			switch {
			case att == nil:
				return nil, fmt.Errorf("tracer: %s/%s: an event probe without its attached event", ev.Group, ev.Name)
			case att.OnSynthetic():
				// Run inline by the programs generating the
				// synthetic event's records (Probe.Inline).
			case att.Event != nil && !sourceKinds[att.Event.Kind]:
				return nil, fmt.Errorf("tracer: %s/%s: tracing an event probe on the %s event %s.%s: %w", ev.Group, ev.Name, att.Event.Kind, att.System, att.Name, syscall.EOPNOTSUPP)
			case att.Filter != "" && att.FilterProg == nil:
				return nil, fmt.Errorf("tracer: %s/%s: an event probe's \"if\" filter was not compiled", ev.Group, ev.Name)
			case att.FilterProg != nil && att.Event == nil:
				// A tracepoint's record: its common_flags and
				// common_preempt_count are known (SourceFlags).
				if err := bpfcode.CheckFilter(att.FilterProg); err != nil {
					return nil, fmt.Errorf("tracer: %s/%s: \"if\" filter: %w: %w", ev.Group, ev.Name, err, syscall.EOPNOTSUPP)
				}
			case att.FilterProg != nil:
				if err := bpfcode.CheckSourceFilter(att.FilterProg); err != nil {
					return nil, fmt.Errorf("tracer: %s/%s: \"if\" filter: %w: %w", ev.Group, ev.Name, err, syscall.EOPNOTSUPP)
				}
			}
			if att.Event != nil && !att.OnSynthetic() {
				// One program per probe of the source, each built
				// as the event probe's own.
				src, probes = att.Event, att.Event.Probes
			}
		}
		for _, sp := range probes {
			if sp.Pending {
				return nil, fmt.Errorf("tracer: %s/%s at %s: %w", ev.Group, ev.Name, place(sp), ErrPending)
			}
			pr, source := sp, (*Source)(nil)
			if src != nil {
				sl, err := fetchargs.NewLayout(argsOf(src, sp), src.Kind.IsReturn())
				if err != nil {
					return nil, fmt.Errorf("tracer: %s/%s: its source %s/%s: %w", ev.Group, ev.Name, src.Group, src.Name, err)
				}
				source = &Source{Event: src, Probe: sp, Layout: sl}
				pr = ev.Probes[0]
			}
			l, err := fetchargs.NewLayout(argsOf(ev, pr), ev.Kind.IsReturn())
			if err != nil {
				return nil, fmt.Errorf("tracer: %s/%s: %w", ev.Group, ev.Name, err)
			}
			if ev.Kind == events.Uretprobe {
				// Its entry program saves the address the function
				// was entered at.
				l.EntrySlots = append(l.EntrySlots, fetchargs.EntryIPSlot)
			}
			pp := &Probe{Index: opts.FirstIndex + uint32(len(p.Probes)), Event: ev, Probe: pr, Layout: l, Source: source}
			p.Probes = append(p.Probes, pp)
			s := l.ScratchSize()
			if ev.Filter != nil {
				s = max(s, bpfcode.FilterScratch(l.RecordSize()))
			}
			if source != nil {
				// The source record, then the probe's own.
				s += bpfcode.SourceAreaSize(source.Layout)
				if s > maxScratch {
					return nil, fmt.Errorf("tracer: %s/%s: its record and its source's take %d bytes, more than %d", ev.Group, ev.Name, s, maxScratch)
				}
			}
			if att := ev.Attached; ev.Kind == events.Eprobe && att.FilterProg != nil {
				s = max(s, bpfcode.FilterScratch(pp.sourceSize()))
			}
			if s > p.ScratchSize {
				p.ScratchSize = s
			}
			if s := 8 * len(l.EntrySlots); s > p.EntryDataSize {
				p.EntryDataSize = s
			}
			if source != nil && 8*len(source.Layout.EntrySlots) > p.EntryDataSize {
				p.EntryDataSize = 8 * len(source.Layout.EntrySlots)
			}
			if s := fetchargs.HeaderSize + l.RecordSize(); s > p.MaxRecord {
				p.MaxRecord = s
			}
			burst = max(burst, fetchargs.HeaderSize+l.Fixed+l.Strings*burstString)
		}
	}
	if opts.Shared {
		p.ScratchSize, p.EntryDataSize = maxScratch, maxEntryData
		p.MaxRecord = max(p.MaxRecord, maxScratch)
	}
	if p.ScratchSize < p.EntryDataSize {
		p.ScratchSize = p.EntryDataSize
	}
	p.RingSize = opts.RingSize
	if p.RingSize == 0 {
		if opts.Shared {
			// Events come later: a burst of a register and a comm.
			burst = max(burst, fetchargs.HeaderSize+8+4+burstString)
		}
		p.RingSize = burstRingSize(burst)
	}
	for p.RingSize < 4*p.MaxRecord {
		p.RingSize *= 2
	}
	p.WakeupBytes = p.RingSize / 8
	return p, nil
}

func place(pr *events.Probe) string {
	if u := pr.Uprobe; u != nil {
		return fmt.Sprintf("%s:0x%x", u.Path, u.Offset)
	}
	if pr.Symbol != "" {
		if pr.Offset != 0 {
			return fmt.Sprintf("%s+%d", pr.Symbol, pr.Offset)
		}
		return pr.Symbol
	}
	return fmt.Sprintf("0x%x", pr.Addr)
}

// Compile builds the program specs of every probe against maps, for the
// kernel m models.
func (p *Plan) Compile(m *kernel.Model, maps *bpfcode.Maps) error {
	if m == nil || m.Arch() == nil {
		return fmt.Errorf("tracer: compile: no kernel model")
	}
	for _, pr := range p.Probes {
		if err := pr.compile(m, maps, p); err != nil {
			return err
		}
	}
	return nil
}

// ipConstant is the __probe_ip (or __probe_func) the record carries: the
// probed address after the kernel's adjustments, as the registry computed
// it. An fprobe's is the function's ftrace call site, where the kernel's
// fprobe handler is called from: past ENDBR64 on IBT kernels, the place a
// kprobe on the function's entry lands (bpf_get_func_ip would give the
// function's start); an fexit's __probe_func is the same site. 0
// (unknown) makes the program ask bpf_get_func_ip.
func ipConstant(m *kernel.Model, kind events.Kind, probe *events.Probe) uint64 {
	if probe.Addr != 0 || (kind != events.Fentry && kind != events.Fexit) || probe.Symbol == "" {
		return probe.Addr
	}
	addr, ok := m.LookupName(probe.Symbol)
	if !ok {
		return 0
	}
	if site, errno := m.ResolveKprobe(addr); errno == 0 {
		return site.Addr
	}
	return addr
}

// sourceSize is the event probe's bpfcode.ProbeProgram.SourceSize: the
// scratch area of its source record, or the copy of its tracepoint's.
func (pr *Probe) sourceSize() int {
	if pr.Source != nil {
		return bpfcode.SourceAreaSize(pr.Source.Layout)
	}
	return bpfcode.SourceSize(pr.Event.Attached.Fields)
}

// program describes the program of a probe of kind at probe, with args
// laid out by l: the record's address and argument fetches, the probe's
// place.
func (pr *Probe) program(m *kernel.Model, plan *Plan, kind events.Kind, probe *events.Probe, args []*fetchargs.Arg, l *fetchargs.Layout) (*bpfcode.ProbeProgram, error) {
	tp := kind == events.Tprobe
	pp := &bpfcode.ProbeProgram{
		Arch:          m.Arch(),
		EventID:       uint16(pr.Event.ID),
		Index:         pr.Index,
		Return:        kind.IsReturn(),
		IP:            ipConstant(m, kind, probe),
		Args:          args,
		Layout:        l,
		EntryDataSize: plan.EntryDataSize,
		EndbrIP:       endbrIP(m, kind, probe),
		WakeupBytes:   plan.WakeupBytes,
		RawTracepoint: tp,
		IgnoreTgid:    plan.IgnoreTgid,
		OnlyPid:       plan.OnlyPid,
		Follow:        plan.Follow,
		ScratchSize:   plan.ScratchSize,
	}
	if u := probe.Uprobe; u != nil {
		pp.User, pp.FileOffset, pp.IP = true, u.Offset, 0
	}
	switch kind {
	case events.Kprobe, events.Kretprobe, events.Fentry, events.Fexit, events.Tprobe:
		// The record's context from the CPU's preempt count where the
		// kernel's is found (PreemptCount below otherwise).
		if c, err := m.PreemptCount(); err == nil {
			// The kernel's record discounts one level of the path
			// that called it, which the program shares; a tracepoint
			// probe's does not, nor does an fprobe exit's, whose
			// path is one deeper than the kretprobe the tracer
			// attaches for it (attachProbe).
			pp.Context = &bpfcode.CPUContext{PerCPUOffsets: c.PerCPUOffsets, Offset: c.Offset, Dec: kind != events.Tprobe && kind != events.Fexit}
		}
	}
	// ktrace's own hits count in histograms and triggers only on events
	// about other tasks: tracepoints other than the system calls'.
	switch kind {
	case events.Tprobe:
		pp.CountOwnHits = probe.Symbol != "sys_enter" && probe.Symbol != "sys_exit"
	case events.Eprobe:
		switch att := pr.Event.Attached; {
		case att == nil:
		case att.OnSynthetic():
			pp.CountOwnHits = true
		case att.Event == nil:
			pp.CountOwnHits = !events.AboutCurrentTask(att.System)
		}
	}
	if tp {
		ip, err := stubIP(m, probe.Symbol)
		if err != nil {
			return nil, err
		}
		pp.IP = ip
	}
	return pp, nil
}

func (pr *Probe) compile(m *kernel.Model, maps *bpfcode.Maps, plan *Plan) error {
	args := argsOf(pr.Event, pr.Probe)
	pp, err := pr.program(m, plan, pr.Event.Kind, pr.Probe, args, pr.Layout)
	if err != nil {
		return fmt.Errorf("tracer: %s/%s: %w", pr.Event.Group, pr.Event.Name, err)
	}
	pp.Filter = pr.Event.Filter
	switch pr.Event.Kind {
	case events.Tprobe, events.Fexit:
		// Seen in the 6.12 VM: a tracepoint probe's and an fprobe
		// exit's records show "...1." (an fprobe entry's "....."
		// unless something else traces its function).
		pp.PreemptCount = 1
	}
	pp.Hists, pp.NoTrace, pp.TraceSwitch = pr.Hists, pr.NoTrace, pr.TraceSwitch
	pp.Triggers, pp.TracingOn = pr.Triggers, pr.TracingOn
	if att := pr.Event.Attached; pr.Event.Kind == events.Eprobe && att != nil {
		pp.EventRecord, pp.EventFields, pp.IP = true, att.Fields, 0
		// Checked in the VM: 6.1.192 reads a "char *" field's pointer,
		// 6.12.95 its first byte.
		pp.EventPtrByte = m.AtLeast(6, 2)
		if att.Event == nil {
			// One deeper than its tracepoint's records, with their
			// flags (seen in the VM, 6.1.192 and 6.12.95: "...1."
			// on sched_process_exit, "...2." on a syscall event,
			// whose records show "...1." themselves).
			flags, preempt := events.TracepointContext(att.System, att.Name)
			pp.Flags, pp.PreemptCount = flags, preempt+1
			// Where the CPU's preempt count is found, the depth is
			// read: the program runs one level deeper than the
			// tracepoint's record (tracing_gen_ctx_dec), which is the
			// event probe's, but for the syscall events, whose records
			// keep that level; Flags is the irqs-off bit where
			// Maps.IrqState has none.
			if c, err := m.PreemptCount(); err == nil {
				pp.Context = &bpfcode.CPUContext{PerCPUOffsets: c.PerCPUOffsets, Offset: c.Offset, Inc: att.System == "syscalls"}
			}
			// The "if" filter reads the attached record's own
			// (seen in the VM on both kernels: preempt count 1 on
			// sys_enter_write, 0 on sched_process_exit).
			pp.SourceFlags, pp.SourcePreempt = flags, preempt
		}
		if src := pr.Source; src != nil {
			sp, err := pr.program(m, plan, src.Event.Kind, src.Probe, argsOf(src.Event, src.Probe), src.Layout)
			if err != nil {
				return fmt.Errorf("tracer: %s/%s: %w", pr.Event.Group, pr.Event.Name, err)
			}
			pp.Source, pp.SourceSize = sp, pr.sourceSize()
		}
		if att.FilterProg != nil {
			pp.SourceFilter, pp.SourceSize, pp.SourceType = att.FilterProg, pr.sourceSize(), uint16(att.ID)
		}
	}
	if pr.Event.Kind == events.Eprobe && pr.Event.Attached.OnSynthetic() {
		// Its maps are the session's but for the scratch value, which
		// the group gives it when attaching: the generating program
		// may be building its own record in the session's.
		im := *maps
		pr.Inline = &bpfcode.InlineProbe{Prog: pp, Maps: &im}
	}
	name := fmt.Sprintf("ktrace_%d", pr.Index)
	ins, err := bpfcode.Compile(pp, maps)
	if err != nil {
		return fmt.Errorf("tracer: %s/%s: %w", pr.Event.Group, pr.Event.Name, err)
	}
	pr.Main = progSpec(name, ins)
	// Attached as its kind (an event probe on a dynamic event, as its
	// source's).
	switch pr.kind() {
	case events.Tprobe:
		pr.Main.Type = ebpf.RawTracepoint
	case events.Eprobe:
		pr.Main.Type = ebpf.TracePoint
	}
	ent, err := bpfcode.CompileEntry(pp, maps)
	if err != nil {
		return fmt.Errorf("tracer: %s/%s: %w", pr.Event.Group, pr.Event.Name, err)
	}
	if ent != nil {
		pr.Entry = progSpec(name+"_e", ent)
	}
	pr.Info = bpfcode.ProbeInfo{IP: pp.IP, EventID: uint64(pr.Event.ID)}
	if plan.Multi && pr.Entry == nil && !pp.EndbrIP && len(pp.Hists) == 0 && len(pp.Triggers) == 0 && !pp.NoTrace && pp.TraceSwitch == nil && (pr.Event.Kind == events.Fentry || (!plan.PlainKprobes && entryKprobe(m, pr, args))) {
		if pr.Info.IP == 0 {
			// __probe_func of an fexit: the function's address, what
			// bpf_get_func_ip gives the unshared program.
			pr.Info.IP, _ = m.LookupName(pr.Probe.Symbol)
		}
		if pr.Info.IP != 0 && !strings.ContainsAny(pr.Probe.Symbol, "*?[") {
			shared := *pp
			shared.Cookie = true
			sins, err := bpfcode.Compile(&shared, maps)
			if err != nil {
				return fmt.Errorf("tracer: %s/%s: %w", pr.Event.Group, pr.Event.Name, err)
			}
			pr.Shared = progSpec("ktrace_shared", sins)
			pr.ShareKey = pr.Event.Kind.String() + "\n" + insKey(sins)
		}
	}
	return nil
}

// argsOf is the fetch arguments of probe p of ev: its own, or the
// event's.
func argsOf(ev *events.Event, p *events.Probe) []*fetchargs.Arg {
	if p.Args != nil {
		return p.Args
	}
	return ev.Args
}

func progSpec(name string, ins asm.Instructions) *ebpf.ProgramSpec {
	return &ebpf.ProgramSpec{
		Name:         name,
		Type:         ebpf.Kprobe,
		Instructions: ins,
		License:      "GPL",
	}
}

// trivialProgram is "return 0", used to probe the kernel's support.
func trivialProgram() asm.Instructions {
	return asm.Instructions{asm.Mov.Imm(asm.R0, 0), asm.Return()}
}

// stubIP is the "(ip)" of a t event's hits: the kernel probes the
// tracepoint through an fprobe on its __probestub_ function, whose hits
// carry the stub's entry as a kprobe there would land (past ENDBR64 on IBT
// kernels: "__probestub_kfree+0x4/0x10" on 6.12).
func stubIP(m *kernel.Model, tracepoint string) (uint64, error) {
	addr, ok := m.LookupName("__probestub_" + tracepoint)
	if !ok {
		return 0, fmt.Errorf("tracepoint %s has no probe stub in the kernel model", tracepoint)
	}
	if site, errno := m.ResolveKprobe(addr); errno == 0 {
		return site.Addr, nil
	}
	return addr, nil
}

// endbrIP reports whether the probe is a kprobe on a function entry that
// the model moved past an ENDBR64 (x86 IBT) without seeing the kernel's
// text (it guessed from the ftrace list): the program then checks the
// running text at each hit (see bpfcode.ProbeProgram.EndbrIP). A model
// that reads the text knows, and its address needs no check.
func endbrIP(m *kernel.Model, kind events.Kind, probe *events.Probe) bool {
	if kind != events.Kprobe || probe.Offset != 0 || probe.Addr == 0 {
		return false
	}
	if m.TextKnown() {
		return false
	}
	if m.Arch().Name != "x86_64" || m.Config("CONFIG_X86_KERNEL_IBT") != "y" {
		return false
	}
	fn, ok := m.FuncAt(probe.Addr)
	return ok && probe.Addr-fn.Addr == 4
}

// insKey is a compact identity of an instruction stream, equal for equal
// programs: every field of every instruction, and the symbol, reference
// and map each one carries. Formatting the instructions as text would do
// the same, at many times the cost, for a thousand probes.
func insKey(ins asm.Instructions) string {
	b := make([]byte, 0, 24*len(ins))
	for _, in := range ins {
		b = binary.LittleEndian.AppendUint16(b, uint16(in.OpCode))
		b = append(b, byte(in.Dst), byte(in.Src))
		b = binary.LittleEndian.AppendUint16(b, uint16(in.Offset))
		b = binary.LittleEndian.AppendUint64(b, uint64(in.Constant))
		b = append(b, in.Symbol()...)
		b = append(b, 0)
		b = append(b, in.Reference()...)
		b = append(b, 0)
		if m := in.Map(); m != nil {
			b = binary.LittleEndian.AppendUint32(b, uint32(m.FD()))
		}
	}
	return string(b)
}

// entryKprobe reports whether kprobe pr can be served by a kprobe-multi
// link like an fprobe (a kretprobe by a kretprobe-multi link, like an
// fprobe's exit): a symbol probe on the function's entry (its ftrace
// call site, where the kernel's kprobe is itself ftrace based and sees
// the same registers), with no argument reading %ip (ftrace's pt_regs
// hold the call's return address there, a kprobe's the probe address +
// 1), on a model that knows the kprobe blacklist (a kprobe-multi link
// does not check it, the kernel's kprobe would).
func entryKprobe(m *kernel.Model, pr *Probe, args []*fetchargs.Arg) bool {
	p := pr.Probe
	switch pr.Event.Kind {
	case events.Kprobe:
	case events.Kretprobe:
		// A kretprobe-multi link returns through the same rethook
		// trampoline, which hands the handler the registers at the
		// return with regs->ip set to the return address, as a
		// kretprobe's does. Only the kernel's default maxactive: another
		// needs a tracefs kprobe event (tracefsOnly).
		if p.MaxActive != events.DefaultMaxActive(m) {
			return false
		}
	default:
		return false
	}
	if p.Symbol == "" || p.Addr == 0 || !m.BlacklistKnown() {
		return false
	}
	site, errno := m.ResolveKprobeSymbol(p.Symbol, p.Offset)
	if errno != 0 || !site.OnEntry || site.Addr != p.Addr || m.WithinNotraceFunc(p.Addr) {
		return false
	}
	ipOff, ok := m.Arch().Regs[ipReg(m.Arch())]
	if pr.Event.Kind == events.Kretprobe {
		// At the return both see regs->ip set to the return address.
		return true
	}
	for _, a := range args {
		for _, op := range a.Ops {
			if op.Code == fetchargs.OpReg && ok && op.Param == uint32(ipOff) {
				return false
			}
		}
	}
	return true
}

func ipReg(a *kernel.Arch) string {
	if a.Name == "arm64" {
		return "pc"
	}
	return "ip"
}
