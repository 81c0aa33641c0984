package kernel

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestEmbedded(t *testing.T) {
	m, err := Embedded()
	if err != nil {
		t.Fatalf("Embedded: %v", err)
	}
	if m2, _ := Embedded(); m2 != m {
		t.Error("Embedded returned a different model on the second call")
	}
	if got := m.Release(); got != "6.12.95+deb12-cloud-amd64" {
		t.Errorf("Release() = %q", got)
	}
	if a, b, c := m.KernelVersion(); a != 6 || b != 12 || c != 95 {
		t.Errorf("KernelVersion() = %d.%d.%d", a, b, c)
	}
	if m.Config("CONFIG_PROBE_EVENTS_BTF_ARGS") != "y" {
		t.Error("CONFIG_PROBE_EVENTS_BTF_ARGS not y")
	}
	// The text table stands in for the image: vfs_read+0 and +4 are
	// boundaries on 6.12, +1 is not (see vmBoundaries).
	for off, want := range map[uint64]bool{0: true, 1: false, 4: true, 5: false, 9: true} {
		if ok, checked := m.InsnBoundary(0xffffffff8143f690 + off); !checked || ok != want {
			t.Errorf("embedded InsnBoundary(vfs_read+%d) = %v, %v; want %v", off, ok, checked, want)
		}
	}
	// The embedded model must match the snapshot it was generated from.
	dir := filepath.Join("..", "..", "shared", "kernels", "6.12")
	if _, err := os.Stat(dir); err != nil {
		t.Logf("snapshot %s absent; skipping comparison", dir)
		return
	}
	s := snapshot(t, "6.12")
	if m.NumSymbols() != s.NumSymbols() || m.CPUs() != s.CPUs() || m.Release() != s.Release() {
		t.Errorf("embedded model differs from %s: %d/%d symbols", dir, m.NumSymbols(), s.NumSymbols())
	}
	for _, name := range []string{"vfs_read", "jiffies", "active_show"} {
		a, b := m.Symbols("", name), s.Symbols("", name)
		if len(a) != len(b) || len(a) == 0 || a[0] != b[0] {
			t.Errorf("Symbols(%s): embedded %v, snapshot %v", name, a, b)
		}
	}
	if _, _, err := m.FuncProto("vfs_read"); err != nil {
		t.Errorf("embedded FuncProto(vfs_read): %v", err)
	}
	vr := s.Symbols("", "vfs_read")[0].Addr
	if m.Blacklisted(vr) || !m.Ftraceable("vfs_read") {
		t.Error("embedded blacklist/filter functions wrong for vfs_read")
	}
}

func TestOpen(t *testing.T) {
	if HostProbeable() {
		t.Skip("host has kprobes; Open(\"\") would load the host")
	}
	m, err := Open("")
	if err != nil {
		t.Fatalf(`Open(""): %v`, err)
	}
	if m.Source() != "embedded" {
		t.Errorf(`Open("") source = %q, want embedded on a host without kprobes`, m.Source())
	}
	if m, err := Open("embedded"); err != nil || m.Source() != "embedded" {
		t.Errorf(`Open("embedded") = %v, %v`, m, err)
	}
	if _, err := Open(filepath.Join(t.TempDir(), "nope")); err == nil || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Open(missing dir) error = %v, want ErrNotExist", err)
	}
	dir := snapshotDir(t, "6.1")
	if m, err := Open(dir); err != nil || m.Release() != "6.1.0-56-cloud-amd64" {
		t.Errorf("Open(%s) = %v, %v", dir, m, err)
	}
}

func TestCountCPUList(t *testing.T) {
	tests := []struct {
		in   string
		want int
		ok   bool
	}{
		{"0", 1, true},
		{"0-3", 4, true},
		{"0-3,8", 5, true},
		{"0-1,4-5,7", 5, true},
		{"", 0, false},
		{"3-1", 0, false},
		{"x", 0, false},
	}
	for _, tt := range tests {
		got, ok := countCPUList(tt.in)
		if got != tt.want || ok != tt.ok {
			t.Errorf("countCPUList(%q) = %d, %v; want %d, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

func TestZeroAddresses(t *testing.T) {
	tests := []struct {
		in        string
		blacklist bool
		want      bool
	}{
		{"0000000000000000 T _text\n0000000000000000 t foo\n", false, true},
		{"0000000000000000 A fixed_percpu_data\nffffffff81000000 T _text\n", false, false},
		{"0x0000000000000000-0x0000000000000000\tfoo\n", true, true},
		{"0xffffffff81c00990-0xffffffff81c009b0\tasm_exc_divide_error\n", true, false},
		{"", false, false},
	}
	for _, tt := range tests {
		if got := zeroAddresses([]byte(tt.in), tt.blacklist); got != tt.want {
			t.Errorf("zeroAddresses(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

// TestLoadHost only checks that failures are explained: the test host has
// no kprobes and usually no readable kallsyms addresses.
func TestLoadHost(t *testing.T) {
	m, err := LoadHost()
	if err == nil {
		t.Logf("host model: %v", m)
		return
	}
	msg := err.Error()
	if !strings.Contains(msg, "/") && !errors.Is(err, ErrHiddenAddresses) {
		t.Errorf("LoadHost error %q names no file", msg)
	}
	t.Logf("LoadHost: %v", err)
}

// TestCapture captures the test host when it allows it; otherwise the
// error must say which file or privilege is missing.
func TestCapture(t *testing.T) {
	dir := t.TempDir()
	err := Capture(dir)
	if err == nil {
		if _, err := LoadSnapshot(dir); err != nil {
			t.Fatalf("captured snapshot does not load: %v", err)
		}
		return
	}
	if !strings.Contains(err.Error(), "/") && !errors.Is(err, ErrHiddenAddresses) {
		t.Errorf("Capture error %q names no file", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("failed Capture left %d files behind", len(entries))
	}
	t.Logf("Capture: %v", err)
}
