package kernel

import (
	"testing"
)

// vmBoundaries are the offsets into vfs_read that the pinned kernels
// accepted for "p vfs_read+N" (N = 0..20); every other offset in that range
// failed with EILSEQ and "Probe point is not an instruction boundary".
// Observed with tools/vmsh on 2026-11-29 (6.1.192 and 6.12.95, nokaslr).
// 6.12 has IBT: +0..+3 is the ENDBR64 (offset 0 is moved to +4), +4 the
// ftrace call site; 6.1 starts with the 5-byte ftrace site.
var vmBoundaries = map[string][]uint64{
	"6.1":  {0, 5, 7, 9, 11, 13, 14, 15, 19},
	"6.12": {0, 4, 9, 11, 13, 15, 17, 18, 19},
}

func TestInsnBoundaryVFSRead(t *testing.T) {
	for release, want := range vmBoundaries {
		t.Run(release, func(t *testing.T) {
			m := snapshot(t, release)
			if !m.HasImage() {
				t.Skip("snapshot has no vmlinuz")
			}
			if err := m.ImageError(); err != nil {
				t.Fatalf("image: %v", err)
			}
			base := m.Symbols("", "vfs_read")[0].Addr
			accepted := map[uint64]bool{}
			for _, o := range want {
				accepted[o] = true
			}
			for o := uint64(0); o <= 20; o++ {
				ok, checked := m.InsnBoundary(base + o)
				if !checked {
					t.Errorf("vfs_read+%d: not checked", o)
					continue
				}
				if ok != accepted[o] {
					t.Errorf("InsnBoundary(vfs_read+%d) = %v, kernel says %v", o, ok, accepted[o])
				}
			}
		})
	}
}

func TestInsnBoundaryUnchecked(t *testing.T) {
	m := snapshot(t, "6.12")
	if !m.HasImage() {
		t.Skip("snapshot has no vmlinuz")
	}
	tests := []struct {
		name string
		addr uint64
	}{
		{"data symbol", m.Symbols("", "jiffies")[0].Addr},
		{"user address", 0x1234},
		{"zero", 0},
	}
	for _, tt := range tests {
		if _, checked := m.InsnBoundary(tt.addr); checked {
			t.Errorf("%s: InsnBoundary(%#x) claims to be checked", tt.name, tt.addr)
		}
	}
}

func TestExtractErrors(t *testing.T) {
	tests := [][]byte{
		nil,
		[]byte("not a kernel"),
		make([]byte, 0x300),
	}
	for _, in := range tests {
		if _, err := extractVmlinux(in); err == nil {
			t.Errorf("extractVmlinux(%d bytes) succeeded", len(in))
		}
	}
	if _, err := decompress([]byte{1, 2, 3, 4, 5, 6, 7, 8}, 10); err == nil {
		t.Error("decompress(unknown magic) succeeded")
	}
	if _, err := lz4Legacy([]byte{0x02, 0x21, 0x4c, 0x18, 0xff, 0xff, 0xff, 0x7f}, 10); err == nil {
		t.Error("lz4Legacy(truncated) succeeded")
	}
}

func TestInsnLen(t *testing.T) {
	tests := []struct {
		code []byte
		want int
	}{
		{[]byte{0xf3, 0x0f, 0x1e, 0xfa}, 4},                   // endbr64
		{[]byte{0x0f, 0x1f, 0x40, 0xd6}, 4},                   // sealed ENDBR (nopl -42(%rax))
		{[]byte{0xe8, 0xdb, 0xea, 0xd1, 0xff}, 5},             // call __fentry__
		{[]byte{0x0f, 0x1f, 0x44, 0x00, 0x00}, 5},             // nop5 (patched ftrace site)
		{[]byte{0x41, 0x57}, 2},                               // push %r15
		{[]byte{0xc3}, 1},                                     // ret
		{[]byte{0x48, 0x8d, 0x25, 0x51, 0x3f, 0xa0, 0x01}, 7}, // lea
		{nil, 0},
	}
	for _, tt := range tests {
		if got := insnLen(tt.code); got != tt.want {
			t.Errorf("insnLen(% x) = %d, want %d", tt.code, got, tt.want)
		}
	}
}
