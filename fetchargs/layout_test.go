package fetchargs

import (
	"fmt"
	"testing"

	"github.com/ktrace-dev/ktrace/internal/vmtest"
)

// TestLayout checks record layouts against the format files' rules: args
// packed without alignment from offset 16 (24 for return probes), string
// fields 4-byte __data_loc words, arrays element size times count.
func TestLayout(t *testing.T) {
	m := vmtest.Model(t, "6.12")
	tests := []struct {
		line    string
		offsets []int
		fixed   int
		strings int
		slot    int
		entry   []int
	}{
		{"p vfs_read a=%di:u8 b=%si:u64 c=+0(%dx):string", []int{16, 17, 25}, 29, 1, 4096, nil},
		{"r vfs_read $retval", []int{24}, 32, 0, 4096, nil},
		{"r vfs_read count=$arg3:u32 buf=+0($arg2):string", []int{24, 28}, 32, 1, 4096, []int{2, 1}},
		{"p vfs_read a=+0(%di):u16[4] s=+0(%si):string[8]", []int{16, 24}, 56, 8, 3072, nil},
		{"p vfs_read $comm \\\"x\" y=%ax:symstr", []int{16, 20, 24}, 28, 3, 4096, nil},
	}
	for _, tc := range tests {
		t.Run(tc.line, func(t *testing.T) {
			res := runLine(m, tc.line)
			if res.err != nil {
				t.Fatal(res.err)
			}
			l, err := NewLayout(res.args, tc.line[0] == 'r')
			if err != nil {
				t.Fatal(err)
			}
			if fmtInts(l.Offsets) != fmtInts(tc.offsets) {
				t.Errorf("offsets %v, want %v", l.Offsets, tc.offsets)
			}
			if l.Fixed != tc.fixed || l.Strings != tc.strings || l.StrSlot != tc.slot {
				t.Errorf("fixed %d strings %d slot %d, want %d %d %d", l.Fixed, l.Strings, l.StrSlot, tc.fixed, tc.strings, tc.slot)
			}
			if fmtInts(l.EntrySlots) != fmtInts(tc.entry) {
				t.Errorf("entry slots %v, want %v", l.EntrySlots, tc.entry)
			}
			if l.ScratchSize() > 1<<15-1 {
				t.Errorf("scratch %d exceeds 16-bit offsets", l.ScratchSize())
			}
		})
	}
}

func fmtInts(v []int) string { return fmt.Sprint(v) }

// TestLayoutManyStrings checks that probes with many strings get shorter
// slots that keep every scratch offset within an instruction's 16 bits.
func TestLayoutManyStrings(t *testing.T) {
	m := vmtest.Model(t, "6.12")
	line := "p vfs_read"
	for i := 0; i < 12; i++ {
		line += " +0(%di):string[64]"
	}
	res := runLine(m, line)
	if res.err != nil {
		t.Fatal(res.err)
	}
	l, err := NewLayout(res.args, false)
	if err != nil {
		t.Fatal(err)
	}
	if l.Strings != 768 || l.StrSlot != 32 {
		t.Errorf("strings %d slot %d, want 768 and 32", l.Strings, l.StrSlot)
	}
	if l.ScratchSize() > 1<<15-1 {
		t.Errorf("scratch %d exceeds 16-bit offsets", l.ScratchSize())
	}
}
