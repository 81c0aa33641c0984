package live

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"

	"github.com/ktrace-dev/ktrace/events"
	"github.com/ktrace-dev/ktrace/tracefs"
)

// fprobeOps mirrors when the kernel registers an fprobe event's ftrace
// user: as soon as the event is defined, enabled or not (6.12's
// trace_fprobe registers the fprobe disabled). A function with two ftrace
// users is called through ftrace's list function, one preemption level
// deeper, so a defined fprobe event makes every other record at its
// function (a kprobe's, an enabled fprobe's) read one level more
// ("...1."). ktrace attaches an fprobe entry's link only when it is
// traced, and an exit through a kretprobe; fprobeOps keeps one
// kprobe-multi link of an empty program on each function whose defined
// fprobe events have no ftrace user of their own, so that the count of
// users is the kernel's.
type fprobeOps struct {
	mu     sync.Mutex // guards what follows
	closed bool
	prog   *ebpf.Program
	link   link.Link
	funcs  []string // what link covers, sorted
}

// TrackFprobes makes b keep fprobeOps for the events of its registry (the
// top level's backend: instances share its definitions, as the kernel's
// fprobes are one per event).
func (b *Backend) TrackFprobes() { b.fpOps = &fprobeOps{} }

// Write defines or removes events, then updates the fprobe users.
func (b *Backend) Write(f tracefs.ControlFile, data []byte) (int, error) {
	n, err := b.RegistryBackend.Write(f, data)
	b.syncFprobes()
	return n, err
}

// Truncate clears a control file, then updates the fprobe users.
func (b *Backend) Truncate(f tracefs.ControlFile) error {
	err := b.RegistryBackend.Truncate(f)
	b.syncFprobes()
	return err
}

// syncFprobes attaches fprobeOps to the functions of the defined fprobe
// events (an entry's only while no backend traces it through its own
// link), replacing the link when that set changed.
func (b *Backend) syncFprobes() {
	o := b.fpOps
	if o == nil || b.model.Config("CONFIG_FPROBE") != "y" {
		return
	}
	backends := []*Backend{b}
	b.smu.Lock()
	for p := range b.peers {
		backends = append(backends, p)
	}
	b.smu.Unlock()
	var funcs []string
	for _, ev := range b.R.Events() {
		if ev.Kind != events.Fentry && ev.Kind != events.Fexit {
			continue
		}
		for _, p := range ev.Probes {
			if p.Pending || p.Symbol == "" || strings.ContainsAny(p.Symbol, "*?[") {
				continue
			}
			if ev.Kind == events.Fentry && tracedByAny(backends, evID{ev.Group, ev.Name, ev.Serial}) {
				continue
			}
			sym := p.Symbol
			if i := strings.IndexByte(sym, ':'); i >= 0 {
				sym = sym[i+1:]
			}
			funcs = append(funcs, sym)
		}
	}
	slices.Sort(funcs)
	funcs = slices.Compact(funcs)
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		return
	}
	if slices.Equal(funcs, o.funcs) && (o.link != nil) == (len(funcs) > 0) {
		return
	}
	o.close()
	if len(funcs) == 0 {
		return
	}
	if err := o.attach(funcs); err != nil && b.warn != nil {
		fmt.Fprintf(b.warn, "ktrace: fprobe events' ftrace users: %v; records at their functions may read one preemption level less than the kernel's\n", err)
	}
}

// tracedByAny reports whether one of the backends has key attached.
func tracedByAny(backends []*Backend, key evID) bool {
	for _, p := range backends {
		p.smu.Lock()
		g := p.live[key]
		p.smu.Unlock()
		if g != nil {
			return true
		}
	}
	return false
}

func (o *fprobeOps) attach(funcs []string) error {
	if o.prog == nil {
		prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{Name: "ktrace_fpops", Type: ebpf.Kprobe, AttachType: ebpf.AttachTraceKprobeMulti, License: "GPL",
			Instructions: asm.Instructions{asm.Mov.Imm(asm.R0, 0), asm.Return()}})
		if err != nil {
			return fmt.Errorf("loading the empty program: %w", err)
		}
		o.prog = prog
	}
	l, err := link.KprobeMulti(o.prog, link.KprobeMultiOptions{Symbols: funcs})
	if err != nil {
		return fmt.Errorf("attaching to %s: %w", strings.Join(funcs, ", "), err)
	}
	o.link, o.funcs = l, funcs
	return nil
}

// shut detaches the link and releases the program for good.
func (o *fprobeOps) shut() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.close()
	if o.prog != nil {
		o.prog.Close()
		o.prog = nil
	}
	o.closed = true
}

// close detaches the link (the program stays for the next one).
func (o *fprobeOps) close() {
	if o.link != nil {
		o.link.Close()
	}
	o.link, o.funcs = nil, nil
}
