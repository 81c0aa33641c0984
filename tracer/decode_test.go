package tracer

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/ktrace-dev/ktrace/events"
	"github.com/ktrace-dev/ktrace/fetchargs"
	"github.com/ktrace-dev/ktrace/internal/vmtest"
	"github.com/ktrace-dev/ktrace/kernel"
)

// recBuilder writes a raw ring buffer sample for one probe by hand, the
// way the kernel lays out the record (format file offsets, __data_loc).
type recBuilder struct {
	p   *Probe
	buf []byte
	dyn int // next free byte of the dynamic area (record offset)
}

func newRec(p *Probe, pid int32, ip, retIP uint64) *recBuilder {
	b := &recBuilder{p: p, buf: make([]byte, fetchargs.HeaderSize+p.Layout.RecordSize()), dyn: p.Layout.Fixed}
	binary.LittleEndian.PutUint64(b.buf[0:], 12345678901234) // 12345.678901
	binary.LittleEndian.PutUint32(b.buf[8:], 1)
	binary.LittleEndian.PutUint32(b.buf[12:], p.Index)
	copy(b.buf[16:], "cat")
	r := b.buf[fetchargs.HeaderSize:]
	binary.LittleEndian.PutUint16(r[0:], uint16(p.Event.ID))
	binary.LittleEndian.PutUint32(r[4:], uint32(pid))
	binary.LittleEndian.PutUint64(r[8:], ip)
	if p.Layout.Return {
		binary.LittleEndian.PutUint64(r[16:], retIP)
	}
	return b
}

func (b *recBuilder) rec() []byte { return b.buf[fetchargs.HeaderSize:] }

// num stores v (little endian, size bytes) at argument i, element k.
func (b *recBuilder) num(i, k int, v uint64) *recBuilder {
	a := b.p.args()[i]
	off := b.p.Layout.Offsets[i] + k*a.Type.Size
	var tmp [8]byte
	binary.LittleEndian.PutUint64(tmp[:], v)
	copy(b.rec()[off:off+a.Type.Size], tmp[:])
	return b
}

// str stores a string (NUL added) in the dynamic area for argument i,
// element k; fault stores a zero-length __data_loc.
func (b *recBuilder) str(i, k int, s string, fault bool) *recBuilder {
	off := b.p.Layout.Offsets[i] + 4*k
	if fault {
		binary.LittleEndian.PutUint32(b.rec()[off:], uint32(b.dyn))
		return b
	}
	n := copy(b.rec()[b.dyn:], s+"\x00")
	binary.LittleEndian.PutUint32(b.rec()[off:], uint32(n)<<16|uint32(b.dyn))
	b.dyn += n
	return b
}

func planFor(t *testing.T, m *kernel.Model, lines ...string) *Plan {
	t.Helper()
	r := events.NewRegistry(m, nil)
	for _, l := range lines {
		f := events.KprobeEvents
		if l[0] == 'f' {
			f = events.DynamicEvents
		}
		if _, err := r.Write(f, []byte(l+"\n")); err != nil {
			t.Fatalf("%s: %v", l, err)
		}
	}
	p, err := NewPlan(r.Events(), PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func addrOf(t *testing.T, m *kernel.Model, name string) uint64 {
	t.Helper()
	a, ok := m.LookupName(name)
	if !ok {
		t.Fatalf("no symbol %s", name)
	}
	return a
}

func symText(t *testing.T, m *kernel.Model, addr uint64) string {
	t.Helper()
	s, ok := m.SymbolAt(addr)
	if !ok {
		t.Fatalf("no symbol at %#x", addr)
	}
	return fmt.Sprintf("%s+%#x/%#x", s.Name, addr-s.Addr, s.Size)
}

// TestTraceText checks trace line bodies against the kernel's print rules
// (print_type_* in trace_probe.c, seq_print_ip_sym, print_probe_args):
// integers in their printf formats, hex with 0x, strings quoted or
// "(fault)", arrays as {a,b}, chars quoted raw, symbols as sym+0xoff/0xsize.
func TestTraceText(t *testing.T) {
	m := vmtest.Model(t, "6.12")
	open := addrOf(t, m, "do_sys_openat2")
	vread := addrOf(t, m, "vfs_read")
	ksys := addrOf(t, m, "ksys_read")
	jiffies := addrOf(t, m, "jiffies")
	plan := planFor(t, m,
		"p:myprobe do_sys_openat2 dfd=%di:s32 path=+0(%si):string flags=+8(%dx):x32",
		"r:rev vfs_read $retval",
		"p:arr vfs_read a=+0(%di):u8[3] c=+0(%si):char s=+0(%dx):string[2] sym=%ax:symbol",
		"p:ints vfs_read a=%di:u8 b=%si:s8 c=%dx:s16 d=%cx:x16 e=%r8:u64 f=%r9:s64 g=%ax:x64 h=%bx:x8",
		"p:strs vfs_read e=+0(%di):string f=+0(%si):ustring y=%ax:symstr",
	)
	tests := []struct {
		name  string
		rec   func() *recBuilder
		want  string
		wantJ string
	}{
		{
			"openat2", func() *recBuilder {
				return newRec(plan.Probes[0], 42, open, 0).num(0, 0, uint64(0xffffff9c)).str(1, 0, "/etc/passwd", false).num(2, 0, 0x8000)
			},
			fmt.Sprintf(`myprobe: (%s) dfd=-100 path="/etc/passwd" flags=0x8000`, symText(t, m, open)),
			fmt.Sprintf(`{"event":"kprobes/myprobe","comm":"cat","pid":42,"cpu":1,"ts_ns":12345678901234,"ip":"%s","args":{"dfd":-100,"path":"/etc/passwd","flags":32768}}`, symText(t, m, open)),
		},
		{
			"kretprobe", func() *recBuilder {
				return newRec(plan.Probes[1], 7, vread, ksys+0x75).num(0, 0, uint64(1<<64-14))
			},
			fmt.Sprintf(`rev: (%s <- vfs_read) arg1=-14`, symText(t, m, ksys+0x75)),
			fmt.Sprintf(`{"event":"kprobes/rev","comm":"cat","pid":7,"cpu":1,"ts_ns":12345678901234,"ip":"%s <- vfs_read","args":{"arg1":-14}}`, symText(t, m, ksys+0x75)),
		},
		{
			"arrays", func() *recBuilder {
				return newRec(plan.Probes[2], 1, vread+4, 0).num(0, 0, 1).num(0, 1, 255).num(0, 2, 0).num(1, 0, 'x').
					str(2, 0, "", false).str(2, 1, "", true).num(3, 0, jiffies+8)
			},
			fmt.Sprintf(`arr: (%s) a={1,255,0} c='x' s={"",(fault)} sym=%s`, symText(t, m, vread+4), symText(t, m, jiffies+8)),
			fmt.Sprintf(`{"event":"kprobes/arr","comm":"cat","pid":1,"cpu":1,"ts_ns":12345678901234,"ip":"%s","args":{"a":[1,255,0],"c":"x","s":["",null],"sym":"%s"}}`, symText(t, m, vread+4), symText(t, m, jiffies+8)),
		},
		{
			"integers", func() *recBuilder {
				return newRec(plan.Probes[3], -1, 0, 0).num(0, 0, 200).num(1, 0, 200).num(2, 0, 0x8000).num(3, 0, 0).
					num(4, 0, 1<<63).num(5, 0, 1<<63).num(6, 0, 0xdeadbeef).num(7, 0, 0xff)
			},
			`ints: (0) a=200 b=-56 c=-32768 d=0x0 e=9223372036854775808 f=-9223372036854775808 g=0xdeadbeef h=0xff`,
			`{"event":"kprobes/ints","comm":"cat","pid":-1,"cpu":1,"ts_ns":12345678901234,"ip":"0","args":{"a":200,"b":-56,"c":-32768,"d":0,"e":9223372036854775808,"f":-9223372036854775808,"g":3735928559,"h":255}}`,
		},
		{
			"strings", func() *recBuilder {
				b := newRec(plan.Probes[4], 3, vread, 0).str(0, 0, "", true).str(1, 0, "a\"b\tc", false)
				// symstr: ktrace's in-flight form, the 8-byte address.
				loc := b.p.Layout.Offsets[2]
				binary.LittleEndian.PutUint32(b.rec()[loc:], 8<<16|uint32(b.dyn))
				binary.LittleEndian.PutUint64(b.rec()[b.dyn:], vread+0x10)
				return b
			},
			fmt.Sprintf(`strs: (%s) e=(fault) f="a"b	c" y="%s"`, symText(t, m, vread), symText(t, m, vread+0x10)),
			fmt.Sprintf(`{"event":"kprobes/strs","comm":"cat","pid":3,"cpu":1,"ts_ns":12345678901234,"ip":"%s","args":{"e":null,"f":"a\"b\tc","y":"%s"}}`, symText(t, m, vread), symText(t, m, vread+0x10)),
		},
	}
	d := NewDecoder(m, plan)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := d.Decode(tc.rec().buf)
			if err != nil {
				t.Fatal(err)
			}
			if got := string(d.AppendBody(nil, &r)); got != tc.want {
				t.Errorf("body\n got %s\nwant %s", got, tc.want)
			}
			j := d.AppendJSON(nil, &r)
			if got := string(j[:len(j)-1]); got != tc.wantJ {
				t.Errorf("json\n got %s\nwant %s", got, tc.wantJ)
			}
			var v map[string]any
			if err := json.Unmarshal(j, &v); err != nil {
				t.Errorf("invalid JSON %s: %v", j, err)
			}
		})
	}
}

// TestTraceContext checks the context columns of a trace line
// (trace_print_context: "%16s-%-7d [%03d] " then the latency flags and
// "%5lu.%06lu: ").
func TestTraceContext(t *testing.T) {
	m := vmtest.Model(t, "6.12")
	plan := planFor(t, m, "p:ev vfs_read")
	d := NewDecoder(m, plan)
	b := newRec(plan.Probes[0], 123, addrOf(t, m, "vfs_read"), 0)
	b.rec()[2] = 0x01 // irqs off
	r, err := d.Decode(b.buf)
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("             cat-123     [001] d.... 12345.678901: ev: (%s)\n", symText(t, m, addrOf(t, m, "vfs_read")))
	if got := string(d.AppendText(nil, &r)); got != want {
		t.Errorf("\n got %q\nwant %q", got, want)
	}
	binary.LittleEndian.PutUint64(b.buf, 5_000_001_000)
	r, _ = d.Decode(b.buf)
	if got := string(d.AppendContext(nil, &r)); got != "             cat-123     [001] d....     5.000001: " {
		t.Errorf("context %q", got)
	}
}

func TestDecodeErrors(t *testing.T) {
	m := vmtest.Model(t, "6.12")
	plan := planFor(t, m, "p:ev vfs_read a=%di")
	d := NewDecoder(m, plan)
	if _, err := d.Decode(make([]byte, 10)); err == nil {
		t.Error("short sample accepted")
	}
	b := newRec(plan.Probes[0], 1, 0, 0)
	binary.LittleEndian.PutUint32(b.buf[12:], 99)
	if _, err := d.Decode(b.buf); err == nil {
		t.Error("unknown probe index accepted")
	}
	b = newRec(plan.Probes[0], 1, 0, 0)
	if _, err := d.Decode(b.buf[:fetchargs.HeaderSize+20]); err == nil {
		t.Error("truncated record accepted")
	}
}

// BenchmarkDecodeFormat measures decode plus trace-line formatting of a
// typical record (three arguments, one string) on one core.
func BenchmarkDecodeFormat(b *testing.B) {
	m := vmtest.Model(b, "6.12")
	t := &testing.T{}
	plan := planFor(t, m, "p:myprobe do_sys_openat2 dfd=%di:s32 path=+0(%si):string flags=+8(%dx):x32")
	open, _ := m.LookupName("do_sys_openat2")
	raw := newRec(plan.Probes[0], 42, open, 0).num(0, 0, uint64(0xffffff9c)).str(1, 0, "/etc/passwd", false).num(2, 0, 0x8000).buf
	d := NewDecoder(m, plan)
	var out []byte
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r, err := d.Decode(raw)
		if err != nil {
			b.Fatal(err)
		}
		out = d.AppendText(out[:0], &r)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
}

// TestSymbolOutsideKernel: :symbol prints an address the kernel's kallsyms
// cannot place (below the kernel image, where only absolute per-CPU
// symbols lie, or in no mapping at all) as hex, as %pS does (seen in the
// VM on 6.1 and 6.12: "$retval:symbol" of 8 prints 0x8), and places
// kernel text as sym+0xoff/0xsize.
func TestSymbolOutsideKernel(t *testing.T) {
	m := vmtest.Model(t, "6.12")
	d := NewDecoder(m, planFor(t, m, "p:ev vfs_read %ax:symbol"))
	vread := addrOf(t, m, "vfs_read")
	for addr, want := range map[uint64]string{
		0:                  "0x0",
		0x8:                "0x8",
		0x1956a73b49fdc200: "0x1956a73b49fdc200",
		vread + 4:          symText(t, m, vread+4),
	} {
		if got := d.symbol(addr); got != want {
			t.Errorf("symbol(%#x) = %q, want %q", addr, got, want)
		}
	}
	if !strings.HasPrefix(d.symbol(vread+4), "vfs_read+0x4/0x") {
		t.Errorf("symbol(vfs_read+4) = %q", d.symbol(vread+4))
	}
}

// TestOpenFailureCleansUp: a session that fails after its maps exist (a
// t event's $stackN, which a raw tracepoint program cannot read) returns
// the error and releases what it made, instead of crashing in its cleanup.
func TestOpenFailureCleansUp(t *testing.T) {
	m := vmtest.Model(t, "6.12")
	r := events.NewRegistry(m, nil)
	if _, err := r.Write(events.DynamicEvents, []byte("t:tk kfree s=$stack1\n")); err != nil {
		t.Fatal(err)
	}
	s, err := Open(Config{Model: m, Events: r.Events()})
	if err == nil {
		s.Close()
		t.Fatal("Open accepted $stack1 on a t event")
	}
	if s != nil {
		t.Errorf("Open returned a session with its error %v", err)
	}
	t.Log(err)
}

// TestAppendLatFlags checks trace_print_lat_fmt's columns for the flag
// combinations the kernel records.
func TestAppendLatFlags(t *testing.T) {
	for _, c := range []struct {
		flags, pc uint8
		want      string
	}{
		{0, 0, "....."},
		{0x01, 2, "d..2."},
		{0x10, 1, "..s1."},
		{0x01 | 0x08, 1, "d.h1."},
		{0x01 | 0x04 | 0x20 | 0x08, 0, "dNh.."},
		{0x04, 0, ".n..."},
		{0x20, 0, ".p..."},
		{0x80, 1, "b..1."},
		{0x81, 0, "D...."},
		{0x01 | 0x40 | 0x08, 0, "d.Z.."},
		{0x40, 0, "..z.."},
		{0x08 | 0x10, 0, "..H.."},
		{0, 0x21, "...12"},
	} {
		if got := string(AppendLatFlags(nil, c.flags, c.pc)); got != c.want {
			t.Errorf("flags %#x pc %#x: got %q, want %q", c.flags, c.pc, got, c.want)
		}
	}
}
