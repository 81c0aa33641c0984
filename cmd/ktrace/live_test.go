package main

import (
	"testing"

	"github.com/ktrace-dev/ktrace/tracefs/live"
)

// Where probes cannot attach (no kprobes here, or a snapshot model),
// ktrace sh and mount keep the emulation and its one stderr note.
func TestTraceWorldEmulated(t *testing.T) {
	g := &globals{kernel: "embedded"}
	e, err := g.loadEnv("kernel")
	if err != nil {
		t.Fatal(err)
	}
	w, note, _, closeWorld := e.newTraceWorld(nil)
	defer closeWorld()
	if note != backendNote {
		t.Errorf("note = %q, want %q", note, backendNote)
	}
	if _, ok := w.fs.Backend().(*live.Backend); ok {
		t.Error("live backend for the embedded model")
	}
}
