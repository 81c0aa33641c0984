package live

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/ktrace-dev/ktrace/tracer"
	"golang.org/x/sys/unix"

	"github.com/ktrace-dev/ktrace/bpfcode"
	"github.com/ktrace-dev/ktrace/events"
	"github.com/ktrace-dev/ktrace/kernel"
	"github.com/ktrace-dev/ktrace/printfmt"
	"github.com/ktrace-dev/ktrace/synth"
	"github.com/ktrace-dev/ktrace/tracefs"
)

// Static events (the kernel's tracepoints, events/SYSTEM/EVENT) are traced
// by a BPF tracepoint program per enabled event: the kernel hands it the
// event's record, laid out as the format file says (the perf path fills
// the same struct the trace buffer would hold), and the program copies it
// into a ring buffer of its own after a small header. The reader prints
// each record from the event's print fmt (package printfmt) as the kernel
// does, or its fields raw, saying once per event why.

// staticHeader is what the program writes before the record: u64 time
// (CLOCK_MONOTONIC ns), u32 CPU, u32 bpf_probe_read_kernel's result, the
// task's comm (16 bytes), the event's number (staticEvent.num) and the
// task's pid.
//
// The record's common fields are not the kernel's there: the perf path
// that runs the program has put its pt_regs pointer over them (and fills
// them in only after). ktrace writes common_type and common_pid back from
// the header; common_flags and common_preempt_count the program writes
// from the CPU's preempt count and the interrupt flag where the model
// tells where the count is (staticTracer.context), else they are the
// ones events.TracepointContext knows.
const staticHeader = 40

// staticDynamic is the room a record gets beyond its fixed fields for its
// __data_loc data (strings, dynamic arrays); longer data is cut.
const staticDynamic = 512

// staticRingSize is the static events' ring buffer.
const staticRingSize = 4 << 20

type staticEvent struct {
	num uint32 // the attach cookie, which the program writes in the header
	ev  *printfmt.Event
	// synth is a synthetic event's definition: its records are printed
	// as the kernel's print_synth_event prints them (synth.go).
	synth *synth.Event
	link  link.Link // nil: the kernel refused the attach (noted)
	noted bool      // the raw-print note was given
	off   atomic.Bool
	// own is the event's own program when the shared one could not be
	// attached (closed with the link).
	own *ebpf.Program
	// offAt, when not 0, is when the event was disabled (CLOCK_MONOTONIC
	// ns): what its program wrote before stays in the trace, as in the
	// kernel's buffer; what it writes after is dropped.
	offAt atomic.Uint64
}

// staticTracer holds the static events' ring buffer, reader and programs.
type staticTracer struct {
	mu   sync.Mutex
	ring *ebpf.Map
	// tracing is tracing_on (triggers.go), which the programs read.
	tracing *ebpf.Map
	rd      *tracer.RingReader
	byNum   map[uint32]*staticEvent
	byName  map[string]*staticEvent
	next    uint32
	// progs are the programs by the record size they copy (a power of
	// two) and the context they record: events share them, the attach
	// cookie telling them apart.
	progs map[staticKind]*ebpf.Program
	// context is where the programs read the CPU's preempt count (nil:
	// they do not, see staticHeader); irq the interrupt flags a kprobe
	// takes for them, nil when it could not be attached.
	context *kernel.PreemptCount
	arch    *kernel.Arch
	irq     *tracer.IrqState
	// closing counts links being closed in the background.
	closing sync.WaitGroup
	done    chan struct{}
	// flushed are Sync calls waiting for the reader to reach a flush.
	flushed []chan struct{}
}

// SetStaticEnabled attaches (on) or detaches a static event's program
// (tracefs.StaticTracer). An attach that fails leaves nothing attached;
// ktrace says why on stderr and the write fails with the errno.
func (b *Backend) SetStaticEnabled(se tracefs.StaticEvent, on bool) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	name := se.System + "/" + se.Name
	if b.staticOn == nil {
		b.staticOn = map[string]bool{}
	}
	was := b.staticOn[name]
	b.staticOn[name] = on
	key := evID{se.System, se.Name, staticSerial}
	if b.staticFilters[key] != nil {
		// A filtered event is traced by a program of its own while
		// enabled.
		if err := b.staticPlain(se, false); err != nil {
			b.staticOn[name] = was
			return err
		}
		if err := b.recompile(key); err != nil {
			b.staticOn[name] = was
			b.recompile(key)
			return err
		}
		if sw := b.hists.switches[key]; sw != nil {
			return setSwitch(sw, on)
		}
		return nil
	}
	if b.hists.static[key] != nil {
		// In soft mode: its program traces it when its switch is on.
		if err := setSwitch(b.hists.switches[key], on); err != nil {
			b.staticOn[name] = was
			return b.staticFail(se, err)
		}
		return nil
	}
	if err := b.staticPlain(se, on); err != nil {
		b.staticOn[name] = was
		return err
	}
	return nil
}

// staticPlain attaches (on) or detaches the program that traces static
// event se when it is not in soft mode. Called with mu held.
func (b *Backend) staticPlain(se tracefs.StaticEvent, on bool) error {
	st, err := b.staticTracer()
	if err != nil {
		return b.staticFail(se, err)
	}
	key := se.System + "/" + se.Name
	st.mu.Lock()
	cur := st.byName[key]
	st.mu.Unlock()
	if !on {
		if cur != nil {
			// The event is off from here: the reader drops what its
			// program writes later (what it wrote before stays).
			// Closing the link waits for an RCU
			// grace period in the kernel; done in the background, a
			// thousand disables do not wait for a thousand of them.
			cur.offAt.Store(monoNow())
			if cur.link != nil {
				st.closing.Add(1)
				go func(l link.Link, own *ebpf.Program) {
					defer st.closing.Done()
					l.Close()
					if own != nil {
						own.Close()
					}
				}(cur.link, cur.own)
			}
			st.mu.Lock()
			delete(st.byName, key)
			st.mu.Unlock()
		}
		return nil
	}
	if cur != nil {
		return nil
	}
	ev, err := printfmt.Parse(se.System, se.Format)
	if err != nil {
		return b.staticFail(se, err)
	}
	kind := st.kind(se.System, se.Name, recordSize(ev))
	prog, err := st.program(kind)
	if err != nil {
		return b.staticFail(se, err)
	}
	st.mu.Lock()
	st.next++
	s := &staticEvent{num: st.next, ev: ev}
	st.mu.Unlock()
	l, err := link.Tracepoint(se.System, se.Name, prog, &link.TracepointOptions{Cookie: uint64(s.num)})
	if linkExists(err) {
		// The same program is still on the tracepoint: a link closing
		// in the background (a disable just before), which the kernel
		// may release a little after the close returns. Wait for it,
		// then give the event a program of its own if need be.
		st.closing.Wait()
		l, err = link.Tracepoint(se.System, se.Name, prog, &link.TracepointOptions{Cookie: uint64(s.num)})
		if linkExists(err) {
			var own *ebpf.Program
			if own, err = st.load(kind); err == nil {
				if l, err = link.Tracepoint(se.System, se.Name, own, &link.TracepointOptions{Cookie: uint64(s.num)}); err != nil {
					own.Close()
					err = fmt.Errorf("a program of its own, the shared one still attached: %w", err)
				} else {
					s.own = own
				}
			}
		}
	}
	switch {
	case errors.Is(err, os.ErrPermission) || errors.Is(err, syscall.EOPNOTSUPP) || errors.Is(err, errNotSupp):
		// The kernel lets no BPF program on this tracepoint (perf
		// refuses it); the kernel's own tracer still has it. The event
		// is enabled as on the kernel and records nothing, said once.
		if b.warn != nil {
			fmt.Fprintf(b.warn, "ktrace: %s/%s: enabled, but records nothing: the kernel refuses a BPF program on it (%v)\n", se.System, se.Name, err)
		}
	case err != nil:
		return b.staticFail(se, err)
	}
	s.link = l
	st.mu.Lock()
	st.byName[key] = s
	st.byNum[s.num] = s
	st.mu.Unlock()
	return nil
}

// linkExists reports whether attaching a program failed with EEXIST: the
// same program is still on the tracepoint. cilium/ebpf reports a perf
// link's failure with the errno's text only (formatted with %v), so the
// text is checked too.
func linkExists(err error) bool {
	return err != nil && (errors.Is(err, os.ErrExist) || strings.HasSuffix(err.Error(), ": "+syscall.EEXIST.Error()))
}

// staticKind tells the static events' programs apart: the record size
// they copy (a power of two), whether they take one from the preempt
// depth as tracing_gen_ctx_dec does (all events but the system calls'),
// and the flags they record where they find no interrupt flag.
type staticKind struct {
	size  int
	dec   bool
	flags uint8
}

// kind is the program kind of static event sys:name, whose record takes
// size bytes.
func (st *staticTracer) kind(sys, name string, size int) staticKind {
	k := staticKind{size: roundSize(size)}
	if st.context != nil {
		// ftrace_syscall_enter and _exit take the context with
		// tracing_gen_ctx, other events with tracing_gen_ctx_dec,
		// which discounts the tracepoint's own preempt_disable.
		k.dec = sys != "syscalls"
		k.flags, _ = events.TracepointContext(sys, name)
	}
	return k
}

// program returns the program of kind k, loading it at first use.
func (st *staticTracer) program(k staticKind) (*ebpf.Program, error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if p := st.progs[k]; p != nil {
		return p, nil
	}
	p, err := st.load(k)
	if err != nil {
		return nil, err
	}
	st.progs[k] = p
	return p, nil
}

// load loads a program of kind k.
func (st *staticTracer) load(k staticKind) (*ebpf.Program, error) {
	p := &bpfcode.StaticCopy{Ring: st.ring, Size: k.size, IgnoreTgid: uint32(os.Getpid()), Flags: k.flags, Arch: st.arch}
	if st.tracing != nil {
		p.TracingOn = st.tracing
	}
	p.Context = st.cpuContext(k.dec)
	ins, err := bpfcode.CompileStaticCopy(p)
	if err != nil {
		return nil, err
	}
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{
		Name:         "ktrace_tp",
		Type:         ebpf.TracePoint,
		License:      "GPL",
		Instructions: ins,
	})
	if err != nil {
		return nil, fmt.Errorf("loading the tracepoint program: %w", err)
	}
	return prog, nil
}

// cpuContext is how a static event's program reads its context (nil:
// it does not).
func (st *staticTracer) cpuContext(dec bool) *bpfcode.CPUContext {
	if st.context == nil {
		return nil
	}
	c := &bpfcode.CPUContext{PerCPUOffsets: st.context.PerCPUOffsets, Offset: st.context.Offset, Dec: dec}
	if st.irq != nil {
		c.IrqState = st.irq.Map
	}
	return c
}

func (b *Backend) staticFail(se tracefs.StaticEvent, err error) error {
	if b.warn != nil {
		fmt.Fprintf(b.warn, "ktrace: enable %s/%s: %v\n", se.System, se.Name, err)
	}
	return fmt.Errorf("attach %s/%s: %w", se.System, se.Name, attachErrno(err))
}

// recordSize is how many bytes of an event's record the program copies:
// its fixed fields, plus room for dynamic data when it has some.
func recordSize(ev *printfmt.Event) int {
	end, dyn := 8, false
	for _, f := range ev.Fields {
		if e := f.Offset + f.Size; e > end {
			end = e
		}
		dyn = dyn || f.DataLoc || f.RelLoc
	}
	if dyn {
		end += staticDynamic
	}
	return (end + 7) &^ 7
}

// staticTracer opens the ring buffer and starts the reader at the first
// static enable (b.mu held).
func (b *Backend) staticTracer() (*staticTracer, error) {
	if b.static != nil {
		return b.static, nil
	}
	raiseFileLimit()
	ring, err := ebpf.NewMap(&ebpf.MapSpec{Name: "ktrace_static", Type: ebpf.RingBuf, MaxEntries: staticRingSize})
	if err != nil {
		return nil, fmt.Errorf("creating the static events' ring buffer: %w", err)
	}
	rd, err := tracer.NewRingReader(ring)
	if err != nil {
		ring.Close()
		return nil, fmt.Errorf("reading the static events' ring buffer: %w", err)
	}
	tracing, err := b.tracing()
	if err != nil {
		rd.Close()
		ring.Close()
		return nil, err
	}
	st := &staticTracer{ring: ring, rd: rd, tracing: tracing, byNum: map[uint32]*staticEvent{}, progs: map[staticKind]*ebpf.Program{}, byName: map[string]*staticEvent{}, done: make(chan struct{})}
	b.staticContext(st)
	b.static = st
	go b.staticPump(st)
	return st, nil
}

// staticPoll is how often the reader looks at the static events' ring.
const staticPoll = 50 * time.Millisecond

// staticPump passes the static events' records to the trace ring.
func (b *Backend) staticPump(st *staticTracer) {
	defer close(st.done)
	defer st.releaseFlushed(-1)
	var buf, line []byte
	for {
		n, err := st.rd.Next(staticPoll, func(sample []byte) {
			b.progress.Add(1)
			// A copy: the ring's pages are read-only, and the record's
			// common fields are written over below.
			buf = append(buf[:0], sample...)
			line = b.staticRecord(st, buf, line)
		})
		st.releaseFlushed(n)
		if err != nil {
			return
		}
	}
}

// releaseFlushed wakes the first n syncStatic calls waiting (n < 0: all).
func (st *staticTracer) releaseFlushed(n int) {
	if n == 0 {
		return
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	st.flushed = closeFirst(st.flushed, n)
}

// staticRecord passes one record of the static events' ring to the trace
// ring, formatting it in line (returned for reuse).
func (b *Backend) staticRecord(st *staticTracer, raw, line []byte) []byte {
	if len(raw) < staticHeader+8 {
		return line
	}
	ts := binary.LittleEndian.Uint64(raw[0:])
	cpu := binary.LittleEndian.Uint32(raw[8:])
	comm := cString(raw[16:32])
	num := binary.LittleEndian.Uint32(raw[32:])
	pid := binary.LittleEndian.Uint32(raw[36:])
	if num == funcStackNum || num == probeStackNum {
		if b.Record != nil && !(b.IgnorePID != 0 && pid == b.IgnorePID) {
			line = appendStaticContext(line[:0], cpu, ts)
			line = b.appendFuncStack(line, raw, num)
			b.Record(ts, int(pid), comm, line)
		}
		return line
	}
	if num == taskForkNum || num == taskFreeNum {
		if len(raw) >= staticHeader+taskRecord {
			b.taskEntry(num, raw[staticHeader:])
		}
		return line
	}
	if num == graphEntNum || num == graphRetNum {
		if len(raw) >= staticHeader+graphRecord && !(b.IgnorePID != 0 && pid == b.IgnorePID) {
			b.graphEntry(num == graphRetNum, cpu, ts, int(pid), comm, raw[staticHeader:])
		}
		return line
	}
	if num == funcNum {
		if b.Record != nil && len(raw) >= staticHeader+funcRecord && !(b.IgnorePID != 0 && pid == b.IgnorePID && !bpfcode.InInterrupt(raw[staticHeader+16])) {
			return b.funcEntry(line, cpu, ts, int(pid), comm, raw[staticHeader:])
		}
		return line
	}
	if num == stackNum {
		// A stacktrace trigger's record (stack.go), with the flags of
		// the record that triggered it.
		if b.Record != nil {
			var flags, preempt uint8
			if len(raw) >= bpfcode.StackFlagsOff+2 {
				flags, preempt = raw[bpfcode.StackFlagsOff], raw[bpfcode.StackFlagsOff+1]
			}
			line = appendStaticContextFlags(line[:0], cpu, ts, flags, preempt)
			line = b.appendStack(line, raw)
			b.Record(ts, int(pid), comm, line)
		}
		return line
	}
	if int32(binary.LittleEndian.Uint32(raw[12:])) != 0 {
		return line
	}
	r := raw[staticHeader:]
	if b.IgnorePID != 0 && pid == b.IgnorePID && !(st.context != nil && bpfcode.InInterrupt(r[2])) {
		// The server's own work; an interrupt that came upon one of
		// its threads is not, and the kernel records it.
		return line
	}
	st.mu.Lock()
	se := st.byNum[num]
	st.mu.Unlock()
	if se == nil || se.off.Load() || b.Record == nil {
		return line
	}
	if at := se.offAt.Load(); at != 0 && ts > at {
		return line
	}
	// The common fields, as far as ktrace knows them (staticHeader).
	binary.LittleEndian.PutUint16(r[0:], uint16(se.ev.ID))
	if se.synth == nil {
		// A synthetic record's come from the program that generated
		// it (bpfcode's synthAction).
		if st.context == nil {
			r[2], r[3] = events.TracepointContext(se.ev.System, se.ev.Name)
		}
	}
	binary.LittleEndian.PutUint32(r[4:], pid)
	line = appendStaticContextFlags(line[:0], cpu, ts, r[2], r[3])
	line = append(line, se.ev.Prefix()...)
	if se.synth != nil {
		line = se.synth.AppendPrintStack(line, r, b.stackText)
		// print_synth_event ends every record with a newline,
		// after a stack field's own.
		line = append(line, '\n')
		b.Record(ts, int(pid), comm, line)
		return line
	}
	// A bare %p prints the address when the hash-ptr option is
	// cleared or the kernel was booted with no_hash_pointers.
	opts := printfmt.Options{Symbols: symbols{b.model}, RawPointers: b.model != nil && b.model.PointersUnhashed()}
	if b.TraceOptions != nil && !b.TraceOptions.OptionOn("hash-ptr") {
		opts.RawPointers = true
	}
	body, err := se.ev.RenderOpts(r, opts)
	if err != nil {
		if !se.noted && b.warn != nil {
			se.noted = true
			fmt.Fprintf(b.warn, "ktrace: %s/%s: printing its fields raw: %v\n", se.ev.System, se.ev.Name, err)
		}
		body = se.ev.Raw(r)
	}
	line = append(line, body...)
	b.Record(ts, int(pid), comm, line)
	return line
}

// syncStatic waits until the reader has passed on what the static ring
// held when it was called.
func (b *Backend) syncStatic() {
	b.mu.Lock()
	st := b.static
	b.mu.Unlock()
	if st == nil {
		return
	}
	// One flush per waiting call, in the same order (releaseFlushed).
	c := make(chan struct{})
	st.mu.Lock()
	if err := st.rd.Flush(); err != nil {
		st.mu.Unlock()
		return
	}
	st.flushed = append(st.flushed, c)
	st.mu.Unlock()
	b.await(c)
}

// closeStatic detaches every static event and stops the reader.
func (b *Backend) closeStatic() {
	b.mu.Lock()
	st := b.static
	b.static = nil
	b.mu.Unlock()
	if st == nil {
		return
	}
	st.mu.Lock()
	for _, s := range st.byName {
		if s.link != nil {
			st.closing.Add(1)
			go func(l link.Link, own *ebpf.Program) {
				defer st.closing.Done()
				l.Close()
				if own != nil {
					own.Close()
				}
			}(s.link, s.own)
		}
	}
	st.byName = map[string]*staticEvent{}
	st.mu.Unlock()
	st.closing.Wait()
	for _, p := range st.progs {
		p.Close()
	}
	st.irq.Close()
	st.rd.Close()
	<-st.done
	st.ring.Close()
}

// appendStaticContext appends " [CPU] ..... SECS.USECS: ", for records
// with no context of their own.
func appendStaticContext(b []byte, cpu uint32, ts uint64) []byte {
	return appendStaticContextFlags(b, cpu, ts, 0, 0)
}

// appendStaticContextFlags is appendStaticContext with the record's
// common_flags and common_preempt_count (the program's, or what
// events.TracepointContext knows): trace_print_lat_fmt's irqs-off,
// need-resched, hard/soft irq, preempt depth and migrate-disable
// columns.
func appendStaticContextFlags(b []byte, cpu uint32, ts uint64, flags, preempt uint8) []byte {
	b = append(b, " ["...)
	b = append(b, fmt.Sprintf("%03d", cpu)...)
	b = append(b, "] "...)
	b = tracer.AppendLatFlags(b, flags, preempt)
	b = append(b, ' ')
	return append(b, fmt.Sprintf("%5d.%06d: ", ts/1e9, ts%1e9/1e3)...)
}

// errNotSupp is the kernel's ENOTSUPP (524), which perf returns for a
// tracepoint it cannot attach to.
const errNotSupp = syscall.Errno(524)

// raiseFileLimit lifts the open-file limit as far as the process may:
// every attached static event holds two descriptors (its perf event and
// its link), and `echo 1 > events/enable` attaches some 1,500.
func raiseFileLimit() {
	var lim syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim) != nil {
		return
	}
	want := uint64(1 << 16)
	if b, err := os.ReadFile("/proc/sys/fs/nr_open"); err == nil {
		if n, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64); err == nil && n < want {
			want = n
		}
	}
	if lim.Max < want {
		// Root (CAP_SYS_RESOURCE) may raise the hard limit; others keep it.
		if syscall.Setrlimit(syscall.RLIMIT_NOFILE, &syscall.Rlimit{Cur: want, Max: want}) == nil {
			return
		}
		want = lim.Max
	}
	if lim.Cur < want {
		_ = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &syscall.Rlimit{Cur: want, Max: lim.Max})
	}
}

func cString(b []byte) string {
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}

// symbols resolves %pS through the kernel model's kallsyms.
type symbols struct{ m *kernel.Model }

func (s symbols) Lookup(addr uint64) (string, string, uint64, uint64, bool) {
	sym, ok := s.m.LookupAddr(addr)
	if !ok {
		return "", "", 0, 0, false
	}
	return sym.Name, sym.Module, sym.Addr, sym.Size, true
}

// monoNow is CLOCK_MONOTONIC in ns, the clock of the records' times.
func monoNow() uint64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return 1
	}
	return uint64(ts.Nano())
}

// roundSize is the record size a shared program copies: size rounded up
// to a power of two, 64 at least.
func roundSize(size int) int {
	n := 64
	for n < size {
		n <<= 1
	}
	return n
}

// staticContext sets up where st's programs read their records' context:
// the CPU's preempt count, found through the model, and the interrupt
// flag, which a kprobe on bpfcode.IrqStateFunction takes for them. What
// cannot be set up is said once on stderr: the records then show the
// context events.TracepointContext knows.
func (b *Backend) staticContext(st *staticTracer) {
	if b.model == nil {
		return
	}
	c, err := b.model.PreemptCount()
	if err != nil {
		if b.warn != nil {
			fmt.Fprintf(b.warn, "ktrace: static events: the flags column shows only what is known of each event: %v\n", err)
		}
		return
	}
	st.context, st.arch = &c, b.model.Arch()
	if st.irq, err = tracer.AttachIrqState(st.arch); err != nil && b.warn != nil {
		fmt.Fprintf(b.warn, "ktrace: static events: the irqs-off column shows only what is known of each event: %v\n", err)
	}
}
