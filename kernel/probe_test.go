package kernel

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/ktrace-dev/ktrace/grammar"
)

// kprobeOutcome replays the place-related part of trace_kprobe_create()
// and register_trace_kprobe() with the model: symbol validation, the
// return-probe entry check, then registration. It returns "ok" or
// "CODE/ERRNO" (errno by symbolic name) for comparison with the VM.
func kprobeOutcome(m *Model, place string, isReturn bool) string {
	major, minor, _ := m.KernelVersion()
	newer := major > 6 || (major == 6 && minor >= 12)
	if addr, err := strconv.ParseUint(place, 0, 64); err == nil {
		code, errno := m.CheckProbeAddress(addr, isReturn)
		if errno == syscall.ENOENT {
			return "ok" // deferred: an address probe without symbol
		}
		return outcome(code, errno)
	}
	sym, offset := place, uint64(0)
	if i := strings.IndexAny(place, "+"); i >= 0 {
		o, err := strconv.ParseUint(place[i+1:], 0, 64)
		if err != nil || o > 0xffffffff {
			return outcome(grammar.ErrBadProbeAddr, syscall.EINVAL)
		}
		sym, offset = place[:i], o
	}
	mod, _ := splitModSym(sym)
	if mod == "" || m.ModuleLoaded(mod) {
		switch n := m.NumberOfSameSymbols(sym); {
		case n == 0 && newer:
			return outcome(grammar.ErrBadProbeAddr, syscall.EINVAL)
		case n == 0:
			return outcome(grammar.ErrBadProbeAddr, syscall.ENOENT)
		case n > 1 && newer:
			return outcome(grammar.ErrNonUniqSymbol, syscall.EINVAL)
		case n > 1:
			return outcome(grammar.ErrNonUniqSymbol, syscall.EADDRNOTAVAIL)
		}
	} else {
		return "ok" // module not loaded: deferred
	}
	if isReturn && m.KprobeOnFuncEntry(sym, offset) == syscall.EINVAL {
		return outcome(grammar.ErrBadRetprobe, syscall.EINVAL)
	}
	a, _ := m.LookupName(sym)
	code, errno := m.CheckProbeAddress(a+offset, isReturn)
	return outcome(code, errno)
}

func outcome(code grammar.Code, errno syscall.Errno) string {
	if errno == 0 {
		return "ok"
	}
	return fmt.Sprintf("%s/%s", code.Name(), grammar.ErrnoName(errno))
}

// vmPlaces are kprobe places written to kprobe_events on the pinned
// kernels with tools/vmsh on 2026-11-29 (6.1.192-2 and 6.12.95-1~bpo12+1,
// booted nokaslr), with the result each kernel gave: "ok", or the
// error_log code and the errno of the failed write. "-" marks a place that
// does not exist on that kernel in this form. Places given as "@sym+N" are
// raw addresses (the symbol's kallsyms address plus N, written in hex).
var vmPlaces = []struct {
	place    string
	ret      bool
	k61, k12 string
}{
	{"vfs_read", false, "ok", "ok"},
	{"vfs_read+1", false, "BAD_INSN_BNDRY/EILSEQ", "BAD_INSN_BNDRY/EILSEQ"},
	{"vfs_read+4", false, "BAD_INSN_BNDRY/EILSEQ", "ok"},
	{"vfs_read+5", false, "ok", "BAD_INSN_BNDRY/EILSEQ"},
	{"vfs_read+9", false, "ok", "ok"},
	{"vfs_read+100000", false, "BAD_INSN_BNDRY/EILSEQ", "BAD_INSN_BNDRY/EILSEQ"},
	{"vfs_read+0x1f0", false, "BAD_INSN_BNDRY/EILSEQ", "BAD_INSN_BNDRY/EILSEQ"},
	{"vfs_read+4294967295", false, "BAD_PROBE_ADDR/ENOENT", "BAD_PROBE_ADDR/ENOENT"},
	{"vfs_read+4294967296", false, "BAD_PROBE_ADDR/EINVAL", "BAD_PROBE_ADDR/EINVAL"},
	// do_sys_openat2 is static and only called directly: no ENDBR64 on
	// either kernel, so offset 4 is inside its first instruction (the
	// __fentry__ call) and only offset 0 is an entry; kprobes/list shows
	// do_sys_openat2+0x0, where vfs_read on 6.12 shows vfs_read+0x4.
	{"do_sys_openat2", false, "ok", "ok"},
	{"do_sys_openat2", true, "ok", "ok"},
	{"do_sys_openat2+1", false, "BAD_INSN_BNDRY/EILSEQ", "BAD_INSN_BNDRY/EILSEQ"},
	{"do_sys_openat2+4", false, "BAD_INSN_BNDRY/EILSEQ", "BAD_INSN_BNDRY/EILSEQ"},
	{"do_sys_openat2+4", true, "BAD_RETPROBE/EINVAL", "BAD_RETPROBE/EINVAL"},
	{"do_sys_openat2+5", false, "ok", "ok"},
	{"do_sys_openat2+5", true, "BAD_RETPROBE/EINVAL", "BAD_RETPROBE/EINVAL"},
	{"vfs_read", true, "ok", "ok"},
	{"vfs_read+1", true, "BAD_RETPROBE/EINVAL", "BAD_RETPROBE/EINVAL"},
	{"vfs_read+4", true, "BAD_RETPROBE/EINVAL", "ok"},
	{"vfs_read+5", true, "BAD_RETPROBE/EINVAL", "BAD_RETPROBE/EINVAL"},
	{"vfs_read+9", true, "BAD_RETPROBE/EINVAL", "BAD_RETPROBE/EINVAL"},
	{"do_int3", false, "FAIL_REG_PROBE/EINVAL", "FAIL_REG_PROBE/EINVAL"},
	{"kprobe_int3_handler", false, "FAIL_REG_PROBE/EINVAL", "FAIL_REG_PROBE/EINVAL"},
	{"jiffies", false, "FAIL_REG_PROBE/EINVAL", "FAIL_REG_PROBE/EINVAL"},
	{"jiffies+4", false, "FAIL_REG_PROBE/EINVAL", "FAIL_REG_PROBE/EINVAL"},
	{"jiffies", true, "FAIL_REG_PROBE/EINVAL", "FAIL_REG_PROBE/EINVAL"},
	{"PageHuge", false, "ok", "NON_UNIQ_SYMBOL/EINVAL"},
	{"active_show", false, "NON_UNIQ_SYMBOL/EADDRNOTAVAIL", "NON_UNIQ_SYMBOL/EINVAL"},
	{"INET_ECN_set_ce", false, "FAIL_REG_PROBE/EINVAL", "FAIL_REG_PROBE/EINVAL"},
	{"native_sched_clock", false, "FAIL_REG_PROBE/EINVAL", "FAIL_REG_PROBE/EINVAL"},
	{"preempt_schedule_notrace", false, "FAIL_REG_PROBE/EINVAL", "FAIL_REG_PROBE/EINVAL"},
	{"__fentry__", false, "FAIL_REG_PROBE/EINVAL", "FAIL_REG_PROBE/EINVAL"},
	{"__x86_return_thunk", false, "FAIL_REG_PROBE/EINVAL", "FAIL_REG_PROBE/EINVAL"},
	{"start_kernel", false, "FAIL_REG_PROBE/EINVAL", "FAIL_REG_PROBE/EINVAL"},
	{"_text", false, "FAIL_REG_PROBE/EINVAL", "FAIL_REG_PROBE/EINVAL"},
	{"_stext", false, "FAIL_REG_PROBE/EINVAL", "FAIL_REG_PROBE/EINVAL"},
	{"nosuchsym", false, "BAD_PROBE_ADDR/ENOENT", "BAD_PROBE_ADDR/EINVAL"},
	{"nosuchsym", true, "BAD_PROBE_ADDR/ENOENT", "BAD_PROBE_ADDR/EINVAL"},
	{"nosuchsym+4", false, "BAD_PROBE_ADDR/ENOENT", "BAD_PROBE_ADDR/EINVAL"},
	{"name_to_dev_t.cold", false, "ok", "-"},
	{"name_to_dev_t", false, "ok", "-"},
	{"__intel_pmu_enable_all.constprop.0", false, "ok", "ok"},
	{"__pfx_vfs_read", false, "-", "FAIL_REG_PROBE/EINVAL"},
	{"__pfx_vfs_read+16", false, "-", "ok"},
	{"__pfx_vfs_read+16", true, "-", "ok"},
	{"do_one_initcall+4", true, "-", "ok"}, // sealed ENDBR still counts
	{"do_one_initcall+1", false, "-", "BAD_INSN_BNDRY/EILSEQ"},
	{"__migrate_device_pages+4", true, "-", "BAD_RETPROBE/EINVAL"}, // no ENDBR
	{"__migrate_device_pages+5", true, "-", "BAD_RETPROBE/EINVAL"},
	{"__migrate_device_pages+5", false, "-", "ok"},
	{"__migrate_device_pages+4", false, "-", "BAD_INSN_BNDRY/EILSEQ"},
	{"ext4:ext4_sync_fs", false, "ok", "ok"}, // module not loaded: deferred
	{"nosuchmod:foo", false, "ok", "ok"},
	{"@_text", false, "FAIL_REG_PROBE/EINVAL", "FAIL_REG_PROBE/EINVAL"},
	{"@vfs_read", false, "ok", "ok"},
	{"@vfs_read", true, "ok", "ok"},
	{"@vfs_read+1", false, "BAD_INSN_BNDRY/EILSEQ", "BAD_INSN_BNDRY/EILSEQ"},
	{"@vfs_read+4", false, "BAD_INSN_BNDRY/EILSEQ", "ok"},
	{"@vfs_read+1", true, "FAIL_REG_PROBE/EINVAL", "FAIL_REG_PROBE/EINVAL"},
	{"@vfs_read+4", true, "FAIL_REG_PROBE/EINVAL", "ok"},
	{"@vfs_read+9", true, "FAIL_REG_PROBE/EINVAL", "FAIL_REG_PROBE/EINVAL"},
	{"@jiffies", false, "FAIL_REG_PROBE/EINVAL", "FAIL_REG_PROBE/EINVAL"},
	// Duplicated names, one instance traced and one not: the traced
	// io_serial_out/mem32_serial_in/dummy_handler/p_stop instances accept
	// probes, the untraced ones are notrace (EINVAL).
	{"0xffffffff81070b00", false, "FAIL_REG_PROBE/EINVAL", "-"},
	{"0xffffffff816c2220", false, "ok", "-"},
	{"0xffffffff81070b00", true, "FAIL_REG_PROBE/EINVAL", "-"},
	{"0xffffffff816c2220", true, "ok", "-"},
	{"0xffffffff8102abb0", false, "FAIL_REG_PROBE/EINVAL", "-"},
	{"0xffffffff81031240", false, "ok", "-"},
	{"0xffffffff81096c50", false, "-", "FAIL_REG_PROBE/EINVAL"},
	{"0xffffffff818e2110", false, "-", "ok"},
	{"0xffffffff81096c50", true, "-", "FAIL_REG_PROBE/EINVAL"},
	{"0xffffffff818e2110", true, "-", "ok"},
	{"0xffffffff81241c90", false, "-", "FAIL_REG_PROBE/EINVAL"},
	{"0xffffffff81638fa0", false, "-", "ok"},
	// Patch sites (jump labels, static calls, BUG ud2) and exception
	// instructions; offsets taken from the image's tables.
	{"initcall_blacklisted+169", false, "FAIL_REG_PROBE/EINVAL", "-"}, // 2-byte jump label
	{"initcall_blacklisted+170", false, "FAIL_REG_PROBE/EINVAL", "-"},
	{"initcall_blacklisted+171", false, "ok", "-"},
	{"do_one_initcall+79", false, "FAIL_REG_PROBE/EINVAL", "-"}, // 5-byte jump label
	{"do_one_initcall+80", false, "FAIL_REG_PROBE/EINVAL", "-"},
	{"do_one_initcall+84", false, "ok", "-"},
	{"do_one_initcall+236", false, "FAIL_REG_PROBE/EINVAL", "-"}, // static call
	{"do_one_initcall+237", false, "FAIL_REG_PROBE/EINVAL", "-"},
	{"do_one_initcall+241", false, "ok", "-"},
	{"do_one_initcall+471", false, "FAIL_REG_PROBE/EINVAL", "-"}, // BUG ud2
	{"do_one_initcall+472", false, "BAD_INSN_BNDRY/EILSEQ", "-"},
	{"do_one_initcall+473", false, "ok", "-"},
	{"vdso_fault+107", false, "ok", "ok"}, // LOCK prefix, one CPU
	{"vdso_fault+108", false, "BAD_INSN_BNDRY/EILSEQ", "BAD_INSN_BNDRY/EILSEQ"},
	{"x86_pmu_event_mapped+20", false, "ok", "-"},                        // LOCK prefix
	{"perf_get_hw_event_config+46", false, "FAIL_REG_PROBE/EINVAL", "-"}, // int3
	{"msr_event_start+79", false, "FAIL_REG_PROBE/EINVAL", "-"},          // int3
	{"run_init_process+32", false, "-", "FAIL_REG_PROBE/EINVAL"},         // 2-byte jump label
	{"run_init_process+33", false, "-", "FAIL_REG_PROBE/EINVAL"},
	{"run_init_process+34", false, "-", "ok"},
	{"do_one_initcall+361", false, "-", "FAIL_REG_PROBE/EINVAL"}, // static call
	{"do_one_initcall+362", false, "-", "FAIL_REG_PROBE/EINVAL"},
	{"do_one_initcall+366", false, "-", "ok"},
	{"do_one_initcall+643", false, "-", "FAIL_REG_PROBE/EINVAL"}, // BUG ud2
	{"do_one_initcall+644", false, "-", "BAD_INSN_BNDRY/EILSEQ"},
	{"do_one_initcall+645", false, "-", "ok"},
	{"tdx_enc_status_change_finish+46", false, "-", "ok"},                // LOCK prefix
	{"ve_instr_len+81", false, "-", "FAIL_REG_PROBE/EINVAL"},             // BUG ud2
	{"perf_get_hw_event_config+45", false, "-", "BAD_INSN_BNDRY/EILSEQ"}, // int3
	{"x86_pmu_aux_output_match+35", false, "-", "BAD_INSN_BNDRY/EILSEQ"}, // int3
	{"__switch_to", false, "FAIL_REG_PROBE/EINVAL", "FAIL_REG_PROBE/EINVAL"},
	{"__switch_to", true, "FAIL_REG_PROBE/EINVAL", "FAIL_REG_PROBE/EINVAL"},
	{"__schedule", false, "FAIL_REG_PROBE/EINVAL", "FAIL_REG_PROBE/EINVAL"},
	{"schedule", true, "ok", "ok"},
	{"do_exit", true, "ok", "ok"},
	{"kthread", true, "ok", "ok"},
	{"0xffffffffa0000000", true, "ok", "ok"},
	{"0xffffffff81000000", true, "FAIL_REG_PROBE/EINVAL", "FAIL_REG_PROBE/EINVAL"},
	// Addresses no symbol covers are deferred (accepted, not armed).
	{"0x1234", false, "ok", "ok"},
	{"0x1234", true, "ok", "ok"},
	{"0", false, "FAIL_REG_PROBE/EINVAL", "FAIL_REG_PROBE/EINVAL"},
	{"0xffffffffff600000", false, "ok", "ok"},
	{"0xffffffffa0000000", false, "ok", "ok"},
}

func TestCheckProbeAddressVM(t *testing.T) {
	for _, release := range []string{"6.1", "6.12"} {
		t.Run(release, func(t *testing.T) {
			m := snapshot(t, release)
			for _, tt := range vmPlaces {
				want := tt.k61
				if release == "6.12" {
					want = tt.k12
				}
				if want == "-" {
					continue
				}
				place := tt.place
				if strings.HasPrefix(place, "@") {
					sym, off, _ := strings.Cut(place[1:], "+")
					a, ok := m.LookupName(sym)
					if !ok {
						t.Fatalf("%s: %s not in kallsyms", place, sym)
					}
					var n uint64
					if off != "" {
						n, _ = strconv.ParseUint(off, 10, 64)
					}
					place = fmt.Sprintf("%#x", a+n)
				}
				if got := kprobeOutcome(m, place, tt.ret); got != want {
					t.Errorf("%s %s (%s): model %s, kernel %s", map[bool]string{false: "p", true: "r"}[tt.ret], tt.place, place, got, want)
				}
			}
		})
	}
}

func TestResolveKprobe(t *testing.T) {
	tests := []struct {
		release string
		sym     string
		off     uint64
		addOff  uint64 // expected Addr - symbol address
		onEntry bool
	}{
		// 6.12 moves a probe at an ENDBR64 function start past it; the
		// VM read "p 0xffffffff8143f690" back as 0xffffffff8143f694.
		{"6.12", "vfs_read", 0, 4, true},
		{"6.12", "vfs_read", 4, 4, true},
		{"6.12", "vfs_read", 9, 9, false},
		{"6.12", "do_one_initcall", 0, 4, true},
		{"6.12", "__migrate_device_pages", 0, 0, true},
		{"6.12", "__migrate_device_pages", 4, 4, false},
		{"6.1", "vfs_read", 0, 0, true},
		{"6.1", "vfs_read", 4, 4, false},
		// No ENDBR64: the probe stays at +0 (kprobes/list reads
		// do_sys_openat2+0x0 on both kernels) and +4 is no entry.
		{"6.12", "do_sys_openat2", 0, 0, true},
		{"6.12", "do_sys_openat2", 4, 4, false},
		{"6.12", "do_sys_openat2", 5, 5, false},
		{"6.1", "do_sys_openat2", 0, 0, true},
		{"6.1", "do_sys_openat2", 5, 5, false},
	}
	for _, tt := range tests {
		m := snapshot(t, tt.release)
		base, _ := m.LookupName(tt.sym)
		site, errno := m.ResolveKprobeSymbol(tt.sym, tt.off)
		if errno != 0 || site.Addr-base != tt.addOff || site.OnEntry != tt.onEntry || site.Func.Name != tt.sym {
			t.Errorf("%s: ResolveKprobeSymbol(%s, %d) = %+v, %v; want +%d entry=%v", tt.release, tt.sym, tt.off, site, errno, tt.addOff, tt.onEntry)
		}
	}
	m := snapshot(t, "6.12")
	if _, errno := m.ResolveKprobe(0); errno != syscall.EINVAL {
		t.Errorf("ResolveKprobe(0) errno %v", errno)
	}
	if _, errno := m.ResolveKprobe(0x1234); errno != syscall.ENOENT {
		t.Errorf("ResolveKprobe(0x1234) errno %v", errno)
	}
	if _, errno := m.ResolveKprobeSymbol("nosuchsym", 0); errno != syscall.ENOENT {
		t.Errorf("ResolveKprobeSymbol(nosuchsym) errno %v", errno)
	}
}

// vmFprobes are "f" lines written to dynamic_events on 6.12 with
// tools/vmsh on 2026-11-29: accepted, or FAIL_REG_PROBE with EINVAL.
var vmFprobes = []struct {
	function string
	ok       bool
}{
	{"vfs_read", true},
	{"vfs_rea*", true},
	{"active_show", true},
	{"do_int3", true},
	{"kprobe_int3_handler", true},
	{"native_sched_clock", false},
	{"preempt_schedule_notrace", false},
	{"INET_ECN_set_ce", false},
	{"jiffies", false},
	{"nosuchsym", false},
	{"PageHuge", false},
	{"start_kernel", false},
	{"ext4:ext4_sync_fs", false},
}

func TestCheckFprobeVM(t *testing.T) {
	m := snapshot(t, "6.12")
	for _, tt := range vmFprobes {
		code, errno := m.CheckFprobe(tt.function)
		if ok := errno == 0; ok != tt.ok {
			t.Errorf("CheckFprobe(%s) = %v, %v; kernel accepted=%v", tt.function, code, errno, tt.ok)
		}
		if errno != 0 && (code != grammar.ErrFailRegProbe || errno != syscall.EINVAL) {
			t.Errorf("CheckFprobe(%s) = %v, %v; want FAIL_REG_PROBE, EINVAL", tt.function, code, errno)
		}
	}
}

func TestNumberOfSameSymbols(t *testing.T) {
	m := snapshot(t, "6.12")
	tests := []struct {
		sym  string
		want int
	}{
		{"vfs_read", 1},
		{"PageHuge", 2},
		{"nosuchsym", 0},
		{"ext4:ext4_sync_fs", 0},
	}
	for _, tt := range tests {
		if got := m.NumberOfSameSymbols(tt.sym); got != tt.want {
			t.Errorf("NumberOfSameSymbols(%s) = %d, want %d", tt.sym, got, tt.want)
		}
	}
}

// TestEmbeddedVM replays the 6.12 observations against the embedded model,
// which decides ENDBR and instruction boundaries from its text table.
func TestEmbeddedVM(t *testing.T) {
	m, err := Embedded()
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range vmPlaces {
		if tt.k12 == "-" {
			continue
		}
		place := tt.place
		if strings.HasPrefix(place, "@") {
			sym, off, _ := strings.Cut(place[1:], "+")
			a, _ := m.LookupName(sym)
			var n uint64
			if off != "" {
				n, _ = strconv.ParseUint(off, 10, 64)
			}
			place = fmt.Sprintf("%#x", a+n)
		}
		if got := kprobeOutcome(m, place, tt.ret); got != tt.k12 {
			t.Errorf("embedded: %v %s: model %s, kernel %s", tt.ret, tt.place, got, tt.k12)
		}
	}
}

// TestTextTableMatchesImage checks that the embedded text table answers
// like decoding the 6.12 image (boundaries, ENDBR, and the whole
// CheckProbeAddress verdict), over the first 48 bytes of every 50th
// symbol.
func TestTextTableMatchesImage(t *testing.T) {
	img := snapshot(t, "6.12")
	if !img.HasImage() {
		t.Skip("snapshot has no vmlinuz")
	}
	emb, err := Embedded()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for i, idx := range img.addrIdx {
		s := img.syms.at(int(idx))
		if i%50 != 0 || !s.IsText() {
			continue
		}
		if img.startsWithEndbr(s) != emb.startsWithEndbr(s) {
			t.Errorf("%s: ENDBR image %v, table %v", s.Name, img.startsWithEndbr(s), emb.startsWithEndbr(s))
		}
		for o := uint64(0); o < 48 && o < s.Size; o++ {
			ok1, c1 := img.InsnBoundary(s.Addr + o)
			ok2, c2 := emb.InsnBoundary(s.Addr + o)
			if ok1 != ok2 || c1 != c2 {
				t.Fatalf("%s+%d: image %v/%v, table %v/%v", s.Name, o, ok1, c1, ok2, c2)
			}
			for _, ret := range []bool{false, true} {
				code1, e1 := img.CheckProbeAddress(s.Addr+o, ret)
				code2, e2 := emb.CheckProbeAddress(s.Addr+o, ret)
				if code1 != code2 || e1 != e2 {
					t.Fatalf("%s+%d ret=%v: image %v/%v, table %v/%v", s.Name, o, ret, code1, e1, code2, e2)
				}
			}
			n++
		}
	}
	t.Logf("%d addresses compared", n)
}

func TestParseTextTableErrors(t *testing.T) {
	for _, in := range [][]byte{
		nil,
		{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01},
		{1, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01},
		{1, 0, 16, 0xff},
		{0, 0, 0, 7},
	} {
		if _, err := parseTextTable(in); err == nil {
			t.Errorf("parseTextTable(% x) succeeded", in)
		}
	}
	if tab, err := parseTextTable([]byte{1, 0x10, 8, 0x05, 0, 0, 1, 0x10, 0, 0, 0, 0}); err != nil || len(tab.sections) != 1 || len(tab.endbr) != 1 {
		t.Errorf("parseTextTable(minimal) = %+v, %v", tab, err)
	} else if !tab.sections[0].has(0x10) || tab.sections[0].has(0x11) || !tab.sections[0].has(0x12) {
		t.Errorf("bitmap lookups wrong")
	}
}

func BenchmarkCheckProbeAddress(b *testing.B) {
	m, err := Embedded()
	if err != nil {
		b.Fatal(err)
	}
	vr, _ := m.LookupName("vfs_read")
	m.CheckProbeAddress(vr, false) // load the text table
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		m.CheckProbeAddress(vr+uint64(i%20), i%2 == 0)
	}
}

// TestConcurrentUse exercises the lazily loaded parts from several
// goroutines (run with -race).
func TestConcurrentUse(t *testing.T) {
	m, err := Embedded()
	if err != nil {
		t.Fatal(err)
	}
	vr, _ := m.LookupName("vfs_read")
	done := make(chan struct{})
	for g := 0; g < 4; g++ {
		go func() {
			defer func() { done <- struct{}{} }()
			for i := uint64(0); i < 50; i++ {
				m.CheckProbeAddress(vr+i, i%2 == 0)
				m.FtraceMatch("vfs_rea*")
				m.Symbols("", "vfs_read")
			}
		}()
	}
	for g := 0; g < 4; g++ {
		<-done
	}
}

// TestVMPlaceCorpus replays testdata/vm-kprobe-places-*.txt, random kprobe
// places whose outcome was recorded on the pinned kernels, against the
// snapshot models (and the embedded model for 6.12).
func TestVMPlaceCorpus(t *testing.T) {
	for _, release := range []string{"6.1", "6.12"} {
		b, err := os.ReadFile(filepath.Join("testdata", "vm-kprobe-places-"+release+".txt"))
		if err != nil {
			t.Fatal(err)
		}
		models := map[string]*Model{"snapshot": snapshot(t, release)}
		if release == "6.12" {
			emb, err := Embedded()
			if err != nil {
				t.Fatal(err)
			}
			models["embedded"] = emb
		}
		n := 0
		for _, line := range strings.Split(string(b), "\n") {
			if line == "" || line[0] == '#' {
				continue
			}
			probe, want, ok := strings.Cut(line, "\t")
			kind, place, ok2 := strings.Cut(probe, " ")
			if !ok || !ok2 || (kind != "p" && kind != "r") {
				t.Fatalf("bad corpus line %q", line)
			}
			for name, m := range models {
				if got := kprobeOutcome(m, place, kind == "r"); got != want {
					t.Errorf("%s %s: %s: model %s, kernel %s", release, name, probe, got, want)
				}
			}
			n++
		}
		if n < 100 {
			t.Errorf("%s: only %d corpus lines", release, n)
		}
	}
}

// TestVMFprobeCorpus replays testdata/vm-fprobes-6.12.txt.
func TestVMFprobeCorpus(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "vm-fprobes-6.12.txt"))
	if err != nil {
		t.Fatal(err)
	}
	m := snapshot(t, "6.12")
	for _, line := range strings.Split(string(b), "\n") {
		if line == "" || line[0] == '#' {
			continue
		}
		probe, want, _ := strings.Cut(line, "\t")
		fn := strings.TrimPrefix(probe, "f ")
		got := "ok"
		if code, errno := m.CheckFprobe(fn); errno != 0 {
			got = outcome(code, errno)
		}
		if got != want {
			t.Errorf("%s: model %s, kernel %s", probe, got, want)
		}
	}
}

// TestIsEndbr checks the function-start encodings is_endbr() accepts. IBT
// sealing (6.12 on CPUs with IBT; tools/vmsh's emulated CPU has none, so
// the VM never seals) overwrites the ENDBR64 of functions never called
// indirectly with a 4-byte NOP that is_endbr() still accepts, so a sealed
// function is probed at +4 and "r FUNC+4" stays an entry exactly as when
// unsealed. The 6.12 form, 66 0f 1f 00, is the constant the pinned 6.12
// image's arch_adjust_kprobe_addr compares with (cmp $0x1f0f66,%eax).
func TestIsEndbr(t *testing.T) {
	tests := []struct {
		code []byte
		want bool
	}{
		{[]byte{0xf3, 0x0f, 0x1e, 0xfa}, true},        // endbr64
		{[]byte{0xf3, 0x0f, 0x1e, 0xfb}, true},        // endbr32
		{[]byte{0x66, 0x0f, 0x1f, 0x00}, true},        // 6.12 seal: osp nopl (%rax)
		{[]byte{0x0f, 0x1f, 0x40, 0xd6}, true},        // later seal: nopl -42(%rax)
		{[]byte{0x0f, 0x1f, 0x44, 0x00, 0x00}, false}, // nop5 (fentry site)
		{[]byte{0xe8, 0x00, 0x00, 0x00, 0x00}, false}, // call __fentry__
		{[]byte{0x66, 0x0f, 0x1f, 0x44}, false},       // nopw prefix
		{[]byte{0xf3, 0x0f, 0x1e}, false},             // short
		{nil, false},
	}
	for _, tt := range tests {
		if got := isEndbr(tt.code); got != tt.want {
			t.Errorf("isEndbr(% x) = %v, want %v", tt.code, got, tt.want)
		}
	}
}
