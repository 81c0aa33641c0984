package tracer

import (
	"fmt"
	"strings"
	"testing"

	"github.com/ktrace-dev/ktrace/events"
	"github.com/ktrace-dev/ktrace/grammar"
	"github.com/ktrace-dev/ktrace/internal/vmtest"
)

// TestDefaultRingSize checks the default ring buffer of a plan: the
// smallest power of two holding 200,000 of its largest events (16 MiB for
// a bare kprobe, 32 MiB with a register and $comm), at most 64 MiB, then
// doubled until four of the largest records fit; a size asked for is
// kept.
func TestDefaultRingSize(t *testing.T) {
	m := vmtest.Model(t, "6.12")
	many := "p:b/m vfs_read"
	for i := range 100 {
		many += fmt.Sprintf(" a%d=%%di", i)
	}
	for _, tc := range []struct {
		lines []string
		asked int
		want  int
	}{
		{[]string{"p:b/a vfs_read"}, 0, 16 << 20},
		{[]string{"r:b/a vfs_read $retval"}, 0, 16 << 20},
		{[]string{"p:b/a vfs_read", "p:b/c vfs_write regs=%di c=$comm"}, 0, 32 << 20},
		{[]string{"p:b/a vfs_read x=%di y=%si z=%dx"}, 0, 32 << 20},
		{[]string{many}, 0, 64 << 20},
		{[]string{"p:b/a vfs_read"}, 1 << 20, 1 << 20},
		{[]string{"p:b/a vfs_read s=+0(%si):string"}, 4096, 32768}, // 4 records of 56+4+4096 bytes
	} {
		r := events.NewRegistry(m, grammar.DialectFor(6, 12))
		for _, l := range tc.lines {
			if _, err := r.Write(events.KprobeEvents, []byte(l+"\n")); err != nil {
				t.Fatalf("%s: %v", l, err)
			}
		}
		p, err := NewPlan(r.Events(), PlanOptions{RingSize: tc.asked})
		if err != nil {
			t.Fatal(err)
		}
		if p.RingSize != tc.want {
			t.Errorf("%s (asked %d): ring of %d bytes, want %d", strings.Join(tc.lines, "; "), tc.asked, p.RingSize, tc.want)
		}
	}
	if SmallestDefaultRing != 16<<20 {
		t.Errorf("SmallestDefaultRing = %d, want 16 MiB", SmallestDefaultRing)
	}
}
