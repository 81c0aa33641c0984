package live

import (
	"strings"
	"testing"

	"github.com/ktrace-dev/ktrace/grammar"
	"github.com/ktrace-dev/ktrace/kernel"
	"github.com/ktrace-dev/ktrace/tracefs"
)

// Where probes cannot attach (no kprobes here, or a snapshot model),
// ktrace sh and mount keep the emulation and its one stderr note.
func TestWorldEmulated(t *testing.T) {
	m, err := kernel.Embedded()
	if err != nil {
		t.Fatal(err)
	}
	major, minor, _ := m.KernelVersion()
	w := Open(Config{Model: m, Dialect: grammar.DialectFor(major, minor)})
	defer w.Close()
	if w.Note != EmulatedNote || w.Live {
		t.Errorf("note = %q, live %v; want %q, not live", w.Note, w.Live, EmulatedNote)
	}
	if _, ok := w.FS.Backend().(*Backend); ok {
		t.Error("live backend for the embedded model")
	}
}

// A mount whose options let others in says, without allow_other, that
// they grant nothing; an emulated mount attaches nothing to warn about.
func TestAccessNotes(t *testing.T) {
	m, err := kernel.Embedded()
	if err != nil {
		t.Fatal(err)
	}
	mode := uint32(0o750)
	acc := &Access{Opts: tracefs.MountOptions{Mode: &mode}}
	w := Open(Config{Model: m, Dialect: grammar.Latest, Mount: acc})
	defer w.Close()
	if n := w.AccessNotes(&Access{}, false); n != nil {
		t.Errorf("no grant: %q", n)
	}
	if n := w.AccessNotes(acc, false); len(n) != 1 || !strings.Contains(n[0], "without --allow-other") {
		t.Errorf("without allow_other: %q", n)
	}
	if n := w.AccessNotes(acc, true); n != nil {
		t.Errorf("emulated, allow_other: %q", n)
	}
}
