package kernel

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// snapshotDir returns the pinned snapshot directory for release ("6.1" or
// "6.12"), skipping the test when it is absent (failing under CI=true).
func snapshotDir(t testing.TB, release string) string {
	t.Helper()
	dir := filepath.Join("..", "..", "shared", "kernels", release)
	if _, err := os.Stat(filepath.Join(dir, FileKallsyms)); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("pinned kernel snapshot %s missing: %v", dir, err)
		}
		t.Skipf("pinned kernel snapshot %s missing (%v); skipping", dir, err)
	}
	return dir
}

var (
	modelMu    sync.Mutex
	modelCache = map[string]*Model{}
)

// snapshot loads (once per test binary) the pinned snapshot for release.
func snapshot(t testing.TB, release string) *Model {
	t.Helper()
	dir := snapshotDir(t, release)
	modelMu.Lock()
	defer modelMu.Unlock()
	if m := modelCache[release]; m != nil {
		return m
	}
	m, err := LoadSnapshot(dir)
	if err != nil {
		t.Fatalf("LoadSnapshot(%s): %v", dir, err)
	}
	modelCache[release] = m
	return m
}

// kallsymsAddr reads the address of the first vmlinux symbol called name
// straight from the snapshot's kallsyms, independently of the parser under
// test.
func kallsymsAddr(t testing.TB, dir, name string) uint64 {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, FileKallsyms))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 3 && fields[2] == name {
			a, err := strconv.ParseUint(fields[0], 16, 64)
			if err != nil {
				t.Fatal(err)
			}
			return a
		}
	}
	t.Fatalf("%s not in %s/kallsyms", name, dir)
	return 0
}

func TestSnapshotVersion(t *testing.T) {
	tests := []struct {
		release      string
		uname        string
		maj, min, pa int
		cpus         int
	}{
		{"6.1", "6.1.0-56-cloud-amd64", 6, 1, 192, 1},
		{"6.12", "6.12.95+deb12-cloud-amd64", 6, 12, 95, 1},
	}
	for _, tt := range tests {
		t.Run(tt.release, func(t *testing.T) {
			m := snapshot(t, tt.release)
			if got := m.Release(); got != tt.uname {
				t.Errorf("Release() = %q, want %q", got, tt.uname)
			}
			if a, b, c := m.KernelVersion(); a != tt.maj || b != tt.min || c != tt.pa {
				t.Errorf("KernelVersion() = %d.%d.%d, want %d.%d.%d", a, b, c, tt.maj, tt.min, tt.pa)
			}
			if m.CPUs() != tt.cpus {
				t.Errorf("CPUs() = %d, want %d", m.CPUs(), tt.cpus)
			}
		})
	}
}

func TestParseVersion(t *testing.T) {
	tests := []struct {
		line         string
		release      string
		maj, min, pa int
		wantErr      bool
	}{
		{"Linux version 6.1.0-56-cloud-amd64 (debian-kernel@lists.debian.org) (gcc-12 (Debian 12.2.0-14+deb12u1) 12.2.0, GNU ld (GNU Binutils for Debian) 2.40) #1 SMP PREEMPT_DYNAMIC Debian 6.1.192-2 (2026-11-16)",
			"6.1.0-56-cloud-amd64", 6, 1, 192, false},
		{"Linux version 6.8.0-45-generic (buildd@lcy02-amd64-115) (x86_64-linux-gnu-gcc-13 (Ubuntu 13.2.0-23ubuntu4) 13.2.0, GNU ld (GNU Binutils for Ubuntu) 2.42) #45-Ubuntu SMP PREEMPT_DYNAMIC Fri Aug 30 12:02:04 UTC 2024",
			"6.8.0-45-generic", 6, 8, 0, false},
		{"Linux version 6.10.3-arch1-1 (linux@archlinux) (gcc (GCC) 14.2.1 20240805) #1 SMP", "6.10.3-arch1-1", 6, 10, 3, false},
		{"Linux version 5.4 (x)", "5.4", 5, 4, 0, false},
		{"FreeBSD 14.0", "", 0, 0, 0, true},
		{"Linux version foo (x)", "", 0, 0, 0, true},
	}
	for _, tt := range tests {
		rel, a, b, c, err := parseVersion(tt.line)
		if (err != nil) != tt.wantErr {
			t.Errorf("parseVersion(%q) error = %v, wantErr %v", tt.line, err, tt.wantErr)
			continue
		}
		if rel != tt.release || a != tt.maj || b != tt.min || c != tt.pa {
			t.Errorf("parseVersion(%q) = %q %d.%d.%d, want %q %d.%d.%d", tt.line, rel, a, b, c, tt.release, tt.maj, tt.min, tt.pa)
		}
	}
}

func TestSymbols(t *testing.T) {
	for _, release := range []string{"6.1", "6.12"} {
		t.Run(release, func(t *testing.T) {
			dir := snapshotDir(t, release)
			m := snapshot(t, release)
			tests := []struct {
				name  string
				count int
				typ   byte
			}{
				{"vfs_read", 1, 'T'},
				{"do_sys_openat2", 1, 't'},
				{"jiffies", 1, 'D'},
				{"_text", 1, 'T'},
				{"no_such_symbol_xyz", 0, 0},
			}
			for _, tt := range tests {
				got := m.Symbols("", tt.name)
				if len(got) != tt.count {
					t.Errorf("Symbols(%q) = %d entries, want %d", tt.name, len(got), tt.count)
					continue
				}
				if tt.count == 0 {
					continue
				}
				if got[0].Type != tt.typ {
					t.Errorf("Symbols(%q) type %c, want %c", tt.name, got[0].Type, tt.typ)
				}
				if want := kallsymsAddr(t, dir, tt.name); got[0].Addr != want {
					t.Errorf("Symbols(%q) addr %#x, want %#x", tt.name, got[0].Addr, want)
				}
				if m.Symbols("ext4", tt.name) != nil {
					t.Errorf("Symbols(ext4, %q) returned vmlinux symbols", tt.name)
				}
			}
			if m.ModuleLoaded("ext4") {
				t.Error("ModuleLoaded(ext4) = true for a snapshot without modules")
			}
		})
	}
}

// TestDuplicateSymbols checks that names kallsyms lists several times are
// all returned (NON_UNIQ_SYMBOL), comparing with a count taken from the file.
func TestDuplicateSymbols(t *testing.T) {
	for _, release := range []string{"6.1", "6.12"} {
		t.Run(release, func(t *testing.T) {
			dir := snapshotDir(t, release)
			m := snapshot(t, release)
			f, err := os.Open(filepath.Join(dir, FileKallsyms))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			counts := map[string]int{}
			sc := bufio.NewScanner(f)
			for sc.Scan() {
				fields := strings.Fields(sc.Text())
				counts[fields[2]]++
			}
			dups := 0
			for name, n := range counts {
				if got := len(m.Symbols("", name)); got != n {
					t.Fatalf("Symbols(%q) = %d, kallsyms has %d", name, got, n)
				}
				if n > 1 {
					dups++
				}
			}
			if dups == 0 {
				t.Fatal("no duplicate names found in kallsyms")
			}
			// A static function defined in several files of both kernels.
			if n := len(m.Symbols("", "active_show")); n < 2 {
				t.Errorf("Symbols(active_show) = %d entries, want several", n)
			}
		})
	}
}

func TestSymbolSizeAndFuncAt(t *testing.T) {
	for _, release := range []string{"6.1", "6.12"} {
		t.Run(release, func(t *testing.T) {
			dir := snapshotDir(t, release)
			m := snapshot(t, release)
			// The size of vfs_read is the gap to the next higher address in kallsyms.
			addr := kallsymsAddr(t, dir, "vfs_read")
			next := nextHigherAddr(t, dir, addr)
			s := m.Symbols("", "vfs_read")[0]
			if s.Size != next-addr {
				t.Errorf("vfs_read size %#x, want %#x", s.Size, next-addr)
			}
			tests := []struct {
				addr uint64
				want string
				ok   bool
			}{
				{addr, "vfs_read", true},
				{addr + 1, "vfs_read", true},
				{next - 1, "vfs_read", true},
				{kallsymsAddr(t, dir, "jiffies"), "", false}, // data symbol
				{0, "", false},
				{kallsymsAddr(t, dir, "_text"), firstAlias(t, dir, "_text"), true}, // first alias at the address
			}
			for _, tt := range tests {
				got, ok := m.FuncAt(tt.addr)
				if ok != tt.ok || got.Name != tt.want {
					t.Errorf("FuncAt(%#x) = %q, %v; want %q, %v", tt.addr, got.Name, ok, tt.want, tt.ok)
				}
			}
			if got, ok := m.FuncAt(next); ok && got.Name == "vfs_read" {
				t.Errorf("FuncAt(end of vfs_read) = vfs_read")
			}
		})
	}
}

// firstAlias returns the name of the first kallsyms line at name's address.
func firstAlias(t testing.TB, dir, name string) string {
	t.Helper()
	addr := fmt.Sprintf("%016x ", kallsymsAddr(t, dir, name))
	b, err := os.ReadFile(filepath.Join(dir, FileKallsyms))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, addr) {
			return strings.Fields(line)[2]
		}
	}
	t.Fatalf("no line at %s", addr)
	return ""
}

// nextHigherAddr returns the lowest kallsyms address above addr.
func nextHigherAddr(t testing.TB, dir string, addr uint64) uint64 {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, FileKallsyms))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	best := ^uint64(0)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		a, _ := strconv.ParseUint(fields[0], 16, 64)
		if a > addr && a < best {
			best = a
		}
	}
	return best
}

func TestBlacklistAndFtrace(t *testing.T) {
	for _, release := range []string{"6.1", "6.12"} {
		t.Run(release, func(t *testing.T) {
			dir := snapshotDir(t, release)
			m := snapshot(t, release)
			// Take the first entry of the blacklist file and check both ends.
			b, err := os.ReadFile(filepath.Join(dir, FileBlacklist))
			if err != nil {
				t.Fatal(err)
			}
			first, _, _ := strings.Cut(string(b), "\n")
			rng, name, _ := strings.Cut(first, "\t")
			lo, hi, _ := strings.Cut(rng, "-")
			start, _ := strconv.ParseUint(strings.TrimPrefix(lo, "0x"), 16, 64)
			end, _ := strconv.ParseUint(strings.TrimPrefix(hi, "0x"), 16, 64)
			if !m.Blacklisted(start) || !m.Blacklisted(end-1) {
				t.Errorf("%s [%#x,%#x) not blacklisted", name, start, end)
			}
			tests := []struct {
				sym  string
				want bool
			}{
				{"vfs_read", false},
				{"do_int3", true},             // NOKPROBE_SYMBOL in arch/x86/kernel/traps.c
				{"kprobe_int3_handler", true}, // kprobes core
				{"asm_exc_divide_error", true},
			}
			for _, tt := range tests {
				s := m.Symbols("", tt.sym)
				if len(s) == 0 {
					t.Errorf("%s: not in kallsyms", tt.sym)
					continue
				}
				if got := m.Blacklisted(s[0].Addr); got != tt.want {
					t.Errorf("Blacklisted(%s) = %v, want %v", tt.sym, got, tt.want)
				}
			}
			ft := []struct {
				name string
				want bool
			}{
				{"vfs_read", true},
				{"do_sys_openat2", true},
				{"jiffies", false},
				{"_text", false},
				{"no_such_symbol_xyz", false},
			}
			for _, tt := range ft {
				if got := m.Ftraceable(tt.name); got != tt.want {
					t.Errorf("Ftraceable(%s) = %v, want %v", tt.name, got, tt.want)
				}
			}
		})
	}
}

func TestConfigAndArch(t *testing.T) {
	tests := []struct {
		release string
		key     string
		want    string
	}{
		{"6.1", "CONFIG_KPROBE_EVENTS", "y"},
		{"6.1", "CONFIG_FPROBE", ""},
		{"6.1", "CONFIG_PROBE_EVENTS_BTF_ARGS", ""},
		{"6.1", "CONFIG_X86_KERNEL_IBT", ""},
		{"6.12", "CONFIG_FPROBE_EVENTS", "y"},
		{"6.12", "CONFIG_PROBE_EVENTS_BTF_ARGS", "y"},
		{"6.12", "CONFIG_X86_KERNEL_IBT", "y"},
		{"6.12", "CONFIG_CC_VERSION_TEXT", `"x86_64-linux-gnu-gcc-12 (Debian 12.2.0-14+deb12u1) 12.2.0"`},
	}
	for _, tt := range tests {
		m := snapshot(t, tt.release)
		if got := m.Config(tt.key); got != tt.want {
			t.Errorf("%s: Config(%s) = %q, want %q", tt.release, tt.key, got, tt.want)
		}
	}
	for _, release := range []string{"6.1", "6.12"} {
		a := snapshot(t, release).Arch()
		if a.Name != "x86_64" || a.ParamMaxStack != 2048 || a.RetReg != "ax" || a.SPReg != "sp" {
			t.Errorf("%s: arch %+v", release, a)
		}
		if off, ok := a.RegOffset("di"); !ok || off != 112 {
			t.Errorf("%s: di offset %d %v", release, off, ok)
		}
	}
}

func TestArchFor(t *testing.T) {
	tests := []struct {
		cfg      map[string]string
		name     string
		maxStack int
		nargs    int
	}{
		{map[string]string{"CONFIG_X86_64": "y"}, "x86_64", 2048, 6},
		{map[string]string{"CONFIG_X86_64": "y", "CONFIG_KASAN": "y"}, "x86_64", 4096, 6},
		{map[string]string{"CONFIG_ARM64": "y", "CONFIG_ARM64_PAGE_SHIFT": "12", "CONFIG_VMAP_STACK": "y"}, "arm64", 2048, 8},
		{map[string]string{"CONFIG_ARM64": "y", "CONFIG_ARM64_PAGE_SHIFT": "12", "CONFIG_KASAN": "y", "CONFIG_KASAN_GENERIC": "y"}, "arm64", 4096, 8},
		{map[string]string{"CONFIG_ARM64": "y", "CONFIG_ARM64_PAGE_SHIFT": "16", "CONFIG_VMAP_STACK": "y"}, "arm64", 8192, 8},
	}
	for _, tt := range tests {
		a, err := archFor(tt.cfg)
		if err != nil {
			t.Errorf("archFor(%v): %v", tt.cfg, err)
			continue
		}
		if a.Name != tt.name || a.ParamMaxStack != tt.maxStack || len(a.ArgRegs) != tt.nargs {
			t.Errorf("archFor(%v) = %s %d %d args", tt.cfg, a.Name, a.ParamMaxStack, len(a.ArgRegs))
		}
	}
	if _, err := archFor(map[string]string{"CONFIG_RISCV": "y"}); err == nil {
		t.Error("archFor(riscv) succeeded")
	}
	a, _ := archFor(map[string]string{"CONFIG_ARM64": "y"})
	for reg, off := range map[string]int{"x0": 0, "x29": 232, "x30": 240, "lr": 240, "sp": 248, "pc": 256, "pstate": 264} {
		if got, ok := a.Regs[reg]; !ok || got != off {
			t.Errorf("arm64 %s = %d %v, want %d", reg, got, ok, off)
		}
	}
}

func TestBTFLazy(t *testing.T) {
	m := snapshot(t, "6.12")
	fn, proto, err := m.FuncProto("vfs_read")
	if err != nil {
		t.Fatalf("FuncProto(vfs_read): %v", err)
	}
	if fn.Name != "vfs_read" || len(proto.Params) != 4 || proto.Params[0].Name != "file" {
		t.Errorf("vfs_read proto = %v", proto)
	}
	if _, _, err := m.FuncProto("no_such_function_xyz"); err == nil {
		t.Error("FuncProto(no_such_function_xyz) succeeded")
	}
}

func TestLoadSnapshotErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := LoadSnapshot(dir); err == nil || !strings.Contains(err.Error(), FileVersion) {
		t.Errorf("empty dir: err = %v, want mention of %s", err, FileVersion)
	}
	write := func(name, content string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(FileVersion, "Linux version 6.12.1 (x) #1\n")
	write(FileCPUs, "2\n")
	write(FileConfig, "CONFIG_X86_64=y\n")
	write(FileKallsyms, "ffffffff81000000 T _text\nbogus\n")
	write(FileBlacklist, "")
	write(FileFilter, "")
	if _, err := LoadSnapshot(dir); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("bad kallsyms: err = %v", err)
	}
	write(FileKallsyms, "ffffffff81000000 T _text\nffffffff81000010 t foo\t[mymod]\n")
	m, err := LoadSnapshot(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !m.ModuleLoaded("mymod") || len(m.Symbols("mymod", "foo")) != 1 || len(m.Symbols("", "foo")) != 0 {
		t.Errorf("module symbol handling wrong")
	}
	// kallsyms_lookup_name: vmlinux first, then modules; MOD:SYM in MOD only.
	for _, tc := range []struct {
		name string
		addr uint64
		ok   bool
	}{
		{"foo", 0xffffffff81000010, true},
		{"mymod:foo", 0xffffffff81000010, true},
		{"othermod:foo", 0, false},
		{"_text", 0xffffffff81000000, true},
		{"mymod:_text", 0, false},
		{"", 0, false},
	} {
		if a, ok := m.LookupName(tc.name); a != tc.addr || ok != tc.ok {
			t.Errorf("LookupName(%q) = %#x, %v; want %#x, %v", tc.name, a, ok, tc.addr, tc.ok)
		}
	}
	if m.BTF() != nil || m.BTFError() != ErrNoBTF {
		t.Errorf("BTF without btf file: %v", m.BTFError())
	}
	if _, checked := m.InsnBoundary(0xffffffff81000000); checked {
		t.Errorf("InsnBoundary checked without an image")
	}
}

func BenchmarkSymbols(b *testing.B) {
	m := snapshot(b, "6.12")
	names := []string{"vfs_read", "do_sys_openat2", "jiffies", "no_such_symbol"}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		m.Symbols("", names[i%len(names)])
	}
}

func BenchmarkLoadSnapshot(b *testing.B) {
	dir := snapshotDir(b, "6.12")
	for i := 0; i < b.N; i++ {
		if _, err := LoadSnapshot(dir); err != nil {
			b.Fatal(err)
		}
	}
}

func TestBlacklistOverlap(t *testing.T) {
	rs, err := parseBlacklist([]byte("0x100-0x200\tbig\n0x110-0x120\tsmall\n0x300-0x310\tother\n0x110-0x120\tsmall\n"))
	if err != nil {
		t.Fatal(err)
	}
	m := &Model{blacklist: rs, blMerged: mergeRanges(rs)}
	tests := []struct {
		addr uint64
		name string
		ok   bool
	}{
		{0xff, "", false},
		{0x100, "big", true},
		{0x115, "small", true},
		{0x150, "big", true},
		{0x200, "", false},
		{0x30f, "other", true},
		{0x310, "", false},
	}
	for _, tt := range tests {
		name, ok := m.BlacklistEntry(tt.addr)
		if name != tt.name || ok != tt.ok || m.Blacklisted(tt.addr) != tt.ok {
			t.Errorf("BlacklistEntry(%#x) = %q, %v; want %q, %v", tt.addr, name, ok, tt.name, tt.ok)
		}
	}
	if _, err := parseBlacklist([]byte("0x200-0x100\tbackwards\n")); err == nil {
		t.Error("backwards range accepted")
	}
}

// TestSymbolSizeVM compares sizes with the "sym+0xoff/0xsize" the pinned
// kernels printed in trace for a kprobe on do_sys_openat2 (tools/vmsh,
// 2026-11-29): 0x170 on 6.1, 0xe0 on 6.12.
func TestSymbolSizeVM(t *testing.T) {
	for release, want := range map[string]uint64{"6.1": 0x170, "6.12": 0xe0} {
		s := snapshot(t, release).Symbols("", "do_sys_openat2")
		if len(s) != 1 || s[0].Size != want {
			t.Errorf("%s: do_sys_openat2 = %+v, want size %#x", release, s, want)
		}
	}
}
