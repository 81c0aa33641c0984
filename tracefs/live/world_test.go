package live

import (
	"testing"

	"github.com/ktrace-dev/ktrace/grammar"
	"github.com/ktrace-dev/ktrace/kernel"
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
