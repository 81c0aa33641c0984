package tracer

import (
	"testing"

	"github.com/ktrace-dev/ktrace/bpfcode"
	"github.com/ktrace-dev/ktrace/events"
	"github.com/ktrace-dev/ktrace/grammar"
	"github.com/ktrace-dev/ktrace/internal/vmtest"
)

// fakeFD stands in for a map when only the compiled instructions matter.
type fakeFD int

func (f fakeFD) FD() int { return int(f) }

// TestEntryProbesShare checks which probes a 6.12 model (kprobe-multi
// links, a known kprobe blacklist and text) attaches through multi links:
// kprobes and kretprobes with the default maxactive at a function's
// entry do, with fprobe entries; an fprobe exit (a kretprobe of its own,
// whose pool of return hooks outlasts a link's), a kprobe past the entry, a kretprobe with its
// own maxactive (tracefs only), one that saves entry arguments, and a
// kprobe reading %ip do not. Probes of one shape on different functions
// share one batch.
func TestEntryProbesShare(t *testing.T) {
	m := vmtest.Model(t, "6.12")
	for _, tc := range []struct {
		line  string
		share bool
	}{
		{"p:b/a vfs_read", true},
		{"p:b/a vfs_read x=%di y=%si z=%dx", true},
		{"r:b/a vfs_read $retval", true},
		{"r:b/a vfs_read ret=$retval:s64 ip=%ip", true},
		{"f:b/a vfs_read", true},
		{"f:b/a vfs_read%return $retval", false},
		{"p:b/a vfs_read+9", false},
		{"p:b/a vfs_read ip=%ip", false},
		{"r5:b/a vfs_read $retval", false},
		{"r:b/a vfs_read $retval $arg2", false},
	} {
		r := events.NewRegistry(m, grammar.DialectFor(6, 12))
		if _, err := r.Write(events.DynamicEvents, []byte(tc.line+"\n")); err != nil {
			t.Fatalf("%s: %v", tc.line, err)
		}
		p, err := NewPlan(r.Events(), PlanOptions{RingSize: 1 << 16, Multi: true})
		if err != nil {
			t.Fatal(err)
		}
		maps := &bpfcode.Maps{Ring: fakeFD(3), Scratch: fakeFD(4), Counters: fakeFD(5), EntryDepth: fakeFD(6), EntryData: fakeFD(7), Probes: fakeFD(8)}
		if err := p.Compile(m, maps); err != nil {
			t.Fatalf("%s: %v", tc.line, err)
		}
		if got := p.Probes[0].Shared != nil; got != tc.share {
			t.Errorf("%s: shared %v, want %v", tc.line, got, tc.share)
		}
	}
	// Kretprobes of one shape on two functions: one batch, one link.
	r := events.NewRegistry(m, grammar.DialectFor(6, 12))
	for _, l := range []string{"r:b/a vfs_read $retval", "r:b/c vfs_write $retval", "p:b/d vfs_read", "p:b/e vfs_write"} {
		if _, err := r.Write(events.KprobeEvents, []byte(l+"\n")); err != nil {
			t.Fatalf("%s: %v", l, err)
		}
	}
	p, err := NewPlan(r.Events(), PlanOptions{RingSize: 1 << 16, Multi: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Compile(m, &bpfcode.Maps{Ring: fakeFD(3), Scratch: fakeFD(4), Counters: fakeFD(5), Probes: fakeFD(8)}); err != nil {
		t.Fatal(err)
	}
	if b := shareBatches(p); len(b) != 2 || len(b[0]) != 2 || len(b[1]) != 2 {
		t.Errorf("batches %d, want 2 of 2 (kretprobes, kprobes)", len(b))
	}
}
