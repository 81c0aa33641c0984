package tracer

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/ktrace-dev/ktrace/events"
	"github.com/ktrace-dev/ktrace/fetchargs"
	"github.com/ktrace-dev/ktrace/kernel"
	"github.com/ktrace-dev/ktrace/tracefs"
)

// Record is one decoded ring buffer record: ktrace's header and the
// kernel-layout record of the probe that sent it.
type Record struct {
	Probe *Probe
	TS    uint64 // bpf_ktime_get_ns at the hit
	CPU   uint32
	Comm  []byte // the task's comm (NUL-trimmed, aliases the raw buffer)
	Raw   []byte // the record as the format file lays it out
	tgid  uint32
}

// Tgid is the process (thread group) id of the task that hit the probe.
func (r *Record) Tgid() uint32 { return r.tgid }

// Pid is the record's common_pid.
func (r *Record) Pid() int32 { return int32(binary.LittleEndian.Uint32(r.Raw[4:])) }

// Flags returns common_flags and common_preempt_count.
func (r *Record) Flags() (flags, preempt uint8) { return r.Raw[2], r.Raw[3] }

// ErrShortRecord is wrapped by Decode for a record too short for its probe.
var ErrShortRecord = errors.New("short record")

// Decoder turns raw ring buffer records into the kernel's trace text and
// ktrace's JSON. Symbol lookups are cached; a Decoder is safe for use by
// one goroutine at a time.
type Decoder struct {
	model *kernel.Model
	// probes is indexed by probe index; a session that attaches more
	// probes later publishes a longer copy (see add).
	probes atomic.Pointer[[]*Probe]
	mu     sync.Mutex
	syms   map[uint64]string // address -> "sym+0xoff/0xsize [mod]"
	bare   map[uint64]string // address -> "sym"
}

// NewDecoder returns a decoder for the probes of plan, symbolising
// addresses with m's kallsyms.
func NewDecoder(m *kernel.Model, plan *Plan) *Decoder {
	d := &Decoder{model: m, syms: map[uint64]string{}, bare: map[uint64]string{}}
	ps := append([]*Probe(nil), plan.Probes...)
	d.probes.Store(&ps)
	return d
}

// add makes the decoder know probes attached after it was made; their
// indices continue the ones it knows. Decode may run meanwhile.
func (d *Decoder) add(probes []*Probe) {
	old := *d.probes.Load()
	ps := make([]*Probe, len(old), len(old)+len(probes))
	copy(ps, old)
	for _, p := range probes {
		for int(p.Index) >= len(ps) {
			ps = append(ps, nil)
		}
		ps[p.Index] = p
	}
	d.probes.Store(&ps)
}

// Decode splits a raw ring buffer sample into a Record. The result aliases
// raw.
func (d *Decoder) Decode(raw []byte) (Record, error) {
	if len(raw) < fetchargs.HeaderSize+8 {
		return Record{}, fmt.Errorf("tracer: record of %d bytes: %w", len(raw), ErrShortRecord)
	}
	idx := binary.LittleEndian.Uint32(raw[12:])
	probes := *d.probes.Load()
	if int(idx) >= len(probes) || probes[idx] == nil {
		return Record{}, fmt.Errorf("tracer: record for unknown probe %d", idx)
	}
	p := probes[idx]
	rec := raw[fetchargs.HeaderSize:]
	if len(rec) < p.Layout.Fixed {
		return Record{}, fmt.Errorf("tracer: %s/%s: record of %d bytes, want %d: %w", p.Event.Group, p.Event.Name, len(rec), p.Layout.Fixed, ErrShortRecord)
	}
	comm := raw[16:32]
	if i := bytes.IndexByte(comm, 0); i >= 0 {
		comm = comm[:i]
	}
	return Record{
		Probe: p,
		TS:    binary.LittleEndian.Uint64(raw),
		CPU:   binary.LittleEndian.Uint32(raw[8:]),
		Comm:  comm,
		Raw:   rec,
		tgid:  binary.LittleEndian.Uint32(raw[32:]),
	}, nil
}

// symbol returns the kernel's sprint_symbol text for addr
// ("name+0xoff/0xsize [mod]"), or "0x%lx" when no symbol covers it.
func (d *Decoder) symbol(addr uint64) string {
	d.mu.Lock()
	defer d.mu.Unlock()
	if s, ok := d.syms[addr]; ok {
		return s
	}
	var s string
	if sym, ok := d.lookup(addr); ok {
		b := make([]byte, 0, 64)
		b = append(b, sym.Name...)
		b = append(b, "+0x"...)
		b = strconv.AppendUint(b, addr-sym.Addr, 16)
		b = append(b, "/0x"...)
		b = strconv.AppendUint(b, sym.Size, 16)
		if sym.Module != "" {
			b = append(b, " ["...)
			b = append(b, sym.Module...)
			b = append(b, ']')
		}
		s = string(b)
	} else {
		s = "0x" + strconv.FormatUint(addr, 16)
	}
	if len(d.syms) < 1<<16 {
		d.syms[addr] = s
	}
	return s
}

// bareSymbol is kallsyms_lookup's name alone (the "<- FUNC" of return
// probes), "0x%08lx" when unknown.
func (d *Decoder) bareSymbol(addr uint64) string {
	d.mu.Lock()
	defer d.mu.Unlock()
	if s, ok := d.bare[addr]; ok {
		return s
	}
	s := fmt.Sprintf("0x%08x", addr)
	if sym, ok := d.lookup(addr); ok {
		s = sym.Name
	}
	if len(d.bare) < 1<<16 {
		d.bare[addr] = s
	}
	return s
}

func (d *Decoder) lookup(addr uint64) (kernel.Symbol, bool) {
	if d.model == nil {
		return kernel.Symbol{}, false
	}
	return d.model.LookupAddr(addr)
}

// appendIPSym is seq_print_ip_sym with the default sym-offset flag.
func (d *Decoder) appendIPSym(b []byte, ip uint64, offset bool) []byte {
	if ip == 0 {
		return append(b, '0')
	}
	if offset {
		return append(b, d.symbol(ip)...)
	}
	return append(b, d.bareSymbol(ip)...)
}

// AppendIP appends the probe part inside the parentheses of a trace line:
// "SYM+0xOFF/0xSIZE", "CALLER+0xOFF/0xSIZE <- FUNC" for return probes, or
// user addresses for uprobes ("0x4a16e0", "0x4a1445 <- 0x493d80"), or the
// attached event for event probes ("sched.sched_switch").
func (d *Decoder) AppendIP(b []byte, r *Record) []byte {
	if att := r.Probe.Event.Attached; att != nil && r.Probe.Event.Kind == events.Eprobe {
		// print_eprobe_event: the attached event.
		b = append(b, att.System...)
		b = append(b, '.')
		return append(b, att.Name...)
	}
	ip := binary.LittleEndian.Uint64(r.Raw[8:])
	if r.Probe.Probe.Uprobe != nil {
		// print_uprobe_event: user addresses in hex, the return address
		// first for uretprobes.
		if r.Probe.Layout.Return {
			b = append(b, "0x"...)
			b = strconv.AppendUint(b, binary.LittleEndian.Uint64(r.Raw[16:]), 16)
			b = append(b, " <- "...)
		}
		b = append(b, "0x"...)
		return strconv.AppendUint(b, ip, 16)
	}
	if r.Probe.Layout.Return {
		ret := binary.LittleEndian.Uint64(r.Raw[16:])
		b = d.appendIPSym(b, ret, true)
		b = append(b, " <- "...)
		return d.appendIPSym(b, ip, false)
	}
	return d.appendIPSym(b, ip, true)
}

// AppendBody appends "EVENT: (IP) name=value …" without a newline: the
// part of a trace line after the context columns.
func (d *Decoder) AppendBody(b []byte, r *Record) []byte {
	b = append(b, r.Probe.Event.Name...)
	b = append(b, ": ("...)
	b = d.AppendIP(b, r)
	b = append(b, ')')
	return d.AppendArgs(b, r)
}

// AppendArgs appends " name=value" for every argument, each printed as
// the kernel's print_type_* functions print it.
func (d *Decoder) AppendArgs(b []byte, r *Record) []byte {
	return d.appendArgs(b, r, false)
}

// appendArgs appends every argument of r: as the trace line spells them
// (" name=value", an array as {v,v}), or with asJSON as the members of a
// JSON object ("name":value, separated by commas, an array as [v,v]).
// One walk serves both, so that the two cannot disagree on which value
// stands where.
func (d *Decoder) appendArgs(b []byte, r *Record, asJSON bool) []byte {
	arrOpen, arrClose := byte('{'), byte('}')
	if asJSON {
		arrOpen, arrClose = '[', ']'
	}
	l := r.Probe.Layout
	for i, a := range r.Probe.args() {
		if asJSON {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, []byte(a.Name))
			b = append(b, ':')
		} else {
			b = append(b, ' ')
			b = append(b, a.Name...)
			b = append(b, '=')
		}
		off, n := l.Offsets[i], a.Count
		if n > 0 {
			b = append(b, arrOpen)
		}
		for k := 0; k < max(n, 1); k++ {
			if k > 0 {
				b = append(b, ',')
			}
			if asJSON {
				b = d.appendJSONValue(b, r, a.Type, off+k*a.Type.Size)
			} else {
				b = d.appendValue(b, r, a.Type, off+k*a.Type.Size)
			}
		}
		if n > 0 {
			b = append(b, arrClose)
		}
	}
	return b
}

func (p *Probe) args() []*fetchargs.Arg { return argsOf(p.Event, p.Probe) }

// raw reads an n-byte little-endian unsigned value.
func raw(b []byte, off, n int) uint64 {
	if off < 0 || off+n > len(b) {
		return 0
	}
	switch n {
	case 1:
		return uint64(b[off])
	case 2:
		return uint64(binary.LittleEndian.Uint16(b[off:]))
	case 4:
		return uint64(binary.LittleEndian.Uint32(b[off:]))
	case 8:
		return binary.LittleEndian.Uint64(b[off:])
	}
	return 0
}

func signExtend(v uint64, n int) int64 {
	s := 64 - 8*uint(n)
	return int64(v<<s) >> s
}

// str returns the bytes a __data_loc word at off points to (without the
// trailing NUL) and whether it holds a value (length 0 is a fault).
func str(rec []byte, off int) ([]byte, bool) {
	loc := raw(rec, off, 4)
	n, o := int(loc>>16), int(loc&0xffff)
	if n == 0 {
		return nil, false
	}
	if o+n > len(rec) {
		n = len(rec) - o
		if n <= 0 {
			return nil, false
		}
	}
	s := rec[o : o+n]
	if i := bytes.IndexByte(s, 0); i >= 0 {
		s = s[:i]
	}
	return s, true
}

// symstr returns the address a symstr value at off holds and whether it
// holds one (a __data_loc of length 0 is a fault).
func symstr(rec []byte, off int) (uint64, bool) {
	loc := raw(rec, off, 4)
	if loc>>16 == 0 {
		return 0, false
	}
	return raw(rec, int(loc&0xffff), 8), true
}

// appendValue prints one value of type t at record offset off.
func (d *Decoder) appendValue(b []byte, r *Record, t *fetchargs.Type, off int) []byte {
	rec := r.Raw
	switch t.Name {
	case "string", "ustring":
		s, ok := str(rec, off)
		if !ok {
			return append(b, "(fault)"...)
		}
		b = append(b, '"')
		b = append(b, s...)
		return append(b, '"')
	case "symstr":
		addr, ok := symstr(rec, off)
		if !ok {
			return append(b, "(fault)"...)
		}
		b = append(b, '"')
		b = append(b, d.symbol(addr)...)
		return append(b, '"')
	case "symbol":
		return append(b, d.symbol(raw(rec, off, 8))...)
	case "char":
		return append(b, '\'', byte(raw(rec, off, 1)), '\'')
	}
	v := raw(rec, off, t.Size)
	switch t.Name[0] {
	case 'x':
		b = append(b, "0x"...)
		return strconv.AppendUint(b, v, 16)
	case 's':
		return strconv.AppendInt(b, signExtend(v, t.Size), 10)
	}
	return strconv.AppendUint(b, v, 10)
}

// AppendContext appends the kernel's trace line context columns:
// "%16s-%-7d [%03d] FLAGS %5lu.%06lu: ".
func (d *Decoder) AppendContext(b []byte, r *Record) []byte {
	b = tracefs.AppendTask(b, string(r.Comm), int(r.Pid()))
	return d.AppendContextRest(b, r)
}

// AppendContextRest appends what follows the TASK-PID column: the CPU,
// the latency flags and the timestamp.
func (d *Decoder) AppendContextRest(b []byte, r *Record) []byte {
	b = append(b, " ["...)
	cpu := r.CPU
	if cpu < 100 {
		b = append(b, '0')
		if cpu < 10 {
			b = append(b, '0')
		}
	}
	b = strconv.AppendUint(b, uint64(cpu), 10)
	b = append(b, "] "...)
	b = appendLatFmt(b, r)
	b = append(b, ' ')
	sec, usec := r.TS/1e9, (r.TS%1e9)/1e3
	n := len(b)
	b = strconv.AppendUint(b, sec, 10)
	if w := len(b) - n; w < 5 {
		pad := []byte("     ")[:5-w]
		b = append(b[:n], append(pad, b[n:]...)...)
	}
	b = append(b, '.')
	n = len(b)
	b = strconv.AppendUint(b, usec, 10)
	if w := len(b) - n; w < 6 {
		pad := []byte("000000")[:6-w]
		b = append(b[:n], append(pad, b[n:]...)...)
	}
	return append(b, ": "...)
}

// appendLatFmt is trace_print_lat_fmt of the record's flags.
func appendLatFmt(b []byte, r *Record) []byte {
	flags, pc := r.Flags()
	return AppendLatFlags(b, flags, pc)
}

// AppendLatFlags is trace_print_lat_fmt: irqs-off, need-resched,
// hard/soft irq, preempt depth and migrate-disable depth, from a record's
// common_flags and common_preempt_count.
func AppendLatFlags(b []byte, flags, pc uint8) []byte {
	const (
		irqsOff        = 0x01
		noSupport      = 0x02
		needResched    = 0x04
		hardirq        = 0x08
		softirq        = 0x10
		preemptResched = 0x20
		nmi            = 0x40
		bhOff          = 0x80
	)
	irq := byte('.')
	switch {
	case flags&irqsOff != 0 && flags&bhOff != 0:
		irq = 'D'
	case flags&irqsOff != 0:
		irq = 'd'
	case flags&bhOff != 0:
		irq = 'b'
	case flags&noSupport != 0:
		irq = 'X'
	}
	resched := byte('.')
	switch flags & (needResched | preemptResched) {
	case needResched | preemptResched:
		resched = 'N'
	case needResched:
		resched = 'n'
	case preemptResched:
		resched = 'p'
	}
	hs := byte('.')
	switch {
	case flags&nmi != 0 && flags&hardirq != 0:
		hs = 'Z'
	case flags&nmi != 0:
		hs = 'z'
	case flags&hardirq != 0 && flags&softirq != 0:
		hs = 'H'
	case flags&hardirq != 0:
		hs = 'h'
	case flags&softirq != 0:
		hs = 's'
	}
	b = append(b, irq, resched, hs)
	if pc&0xf != 0 {
		b = strconv.AppendUint(b, uint64(pc&0xf), 16)
	} else {
		b = append(b, '.')
	}
	if pc&0xf0 != 0 {
		b = strconv.AppendUint(b, uint64(pc>>4), 16)
	} else {
		b = append(b, '.')
	}
	return b
}

// AppendText appends the whole trace line, newline included.
func (d *Decoder) AppendText(b []byte, r *Record) []byte {
	b = d.AppendContext(b, r)
	b = d.AppendBody(b, r)
	return append(b, '\n')
}
