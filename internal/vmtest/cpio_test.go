package vmtest

import (
	"bytes"
	"strconv"
	"strings"
	"testing"
)

// readCpio parses a newc archive back into its members, checking the
// magic, the NUL-terminated name and the 4-byte alignment of every part.
func readCpio(t *testing.T, b []byte) []cpioEntry {
	t.Helper()
	var out []cpioEntry
	off := 0
	field := func(i int) uint32 {
		v, err := strconv.ParseUint(string(b[off+6+8*i:off+6+8*i+8]), 16, 32)
		if err != nil {
			t.Fatalf("header at %d field %d: %v", off, i, err)
		}
		return uint32(v)
	}
	for {
		if off%4 != 0 {
			t.Fatalf("header at unaligned offset %d", off)
		}
		if off+110 > len(b) || string(b[off:off+6]) != "070701" {
			t.Fatalf("bad header at %d", off)
		}
		mode, size, rmaj, rmin, nsize := field(1), field(6), field(9), field(10), field(11)
		nameStart := off + 110
		name := string(b[nameStart : nameStart+int(nsize)-1])
		if b[nameStart+int(nsize)-1] != 0 {
			t.Fatalf("%s: name not NUL-terminated", name)
		}
		dataStart := (nameStart + int(nsize) + 3) &^ 3
		data := b[dataStart : dataStart+int(size)]
		off = (dataStart + int(size) + 3) &^ 3
		if name == "TRAILER!!!" {
			if off != len(b) {
				t.Fatalf("%d bytes after trailer", len(b)-off)
			}
			return out
		}
		out = append(out, cpioEntry{name: name, mode: mode, data: append([]byte(nil), data...), major: rmaj, minor: rmin})
	}
}

func TestTreeWritesParentsFirst(t *testing.T) {
	tr := newTree()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(tr.file("/a/b/c.txt", []byte("hello"), 0o644))
	must(tr.symlink("bin/sh", "busybox"))
	must(tr.file("bin/busybox", []byte("12345678"), 0o755))
	must(tr.charDev("dev/console", 5, 1))
	must(tr.file("a-b", []byte("x"), 0o600))
	var buf bytes.Buffer
	must(tr.writeTo(&buf))
	got := readCpio(t, buf.Bytes())
	want := []cpioEntry{
		{name: "a", mode: modeDir | 0o755},
		{name: "a-b", mode: modeRegular | 0o600, data: []byte("x")},
		{name: "a/b", mode: modeDir | 0o755},
		{name: "a/b/c.txt", mode: modeRegular | 0o644, data: []byte("hello")},
		{name: "bin", mode: modeDir | 0o755},
		{name: "bin/busybox", mode: modeRegular | 0o755, data: []byte("12345678")},
		{name: "bin/sh", mode: modeSymlink | 0o777, data: []byte("busybox")},
		{name: "dev", mode: modeDir | 0o755},
		{name: "dev/console", mode: modeCharDev | 0o600, major: 5, minor: 1},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d members, want %d: %+v", len(got), len(want), got)
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.name != w.name || g.mode != w.mode || !bytes.Equal(g.data, w.data) || g.major != w.major || g.minor != w.minor {
			t.Errorf("member %d = %+v, want %+v", i, g, w)
		}
	}
}

func TestCleanRejectsBadPaths(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		ok       bool
	}{
		{"/bin/sh", "bin/sh", true},
		{"bin//sh", "bin/sh", true},
		{"/../etc/x", "etc/x", true}, // cannot escape the archive root
		{"/", "", false},
		{"", "", false},
		{"a\x00b", "", false},
	} {
		got, err := clean(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("clean(%q) = %q, %v; want %q, ok=%v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

func TestVersionLess(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want bool
	}{
		{"6.1", "6.12", true},
		{"6.12", "6.1", false},
		{"6.9", "6.12", true},
		{"5.15", "6.1", true},
		{"6.1", "6.1", false},
		{"6.1", "6.1.5", true},
		{"6.12", "x", true},
	} {
		if got := versionLess(tc.a, tc.b); got != tc.want {
			t.Errorf("versionLess(%q, %q) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}

func TestCheckStatic(t *testing.T) {
	if err := checkStatic([]byte("#!/bin/sh\n")); err == nil {
		t.Error("a shell script passed as a static ELF binary")
	}
}

func TestKernelWarnings(t *testing.T) {
	console := []byte("[    1.0] Run /init as init process\r\n" +
		"[    2.0] ------------[ cut here ]------------\r\n" +
		"[    2.1] WARNING: CPU: 0 PID: 1 at kernel/trace/trace_kprobe.c:100 foo+0x1/0x2\r\n" +
		"[    2.2] RIP: 0010:foo+0x1/0x2\r\n" +
		"[    3.0] reboot: Power down\r\n")
	got := kernelWarnings(console)
	want := []string{
		"[    2.1] WARNING: CPU: 0 PID: 1 at kernel/trace/trace_kprobe.c:100 foo+0x1/0x2",
		"[    2.2] RIP: 0010:foo+0x1/0x2",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("kernelWarnings = %q, want %q", got, want)
	}
}
