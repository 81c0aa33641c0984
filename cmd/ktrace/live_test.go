package main

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"testing"

	"github.com/ktrace-dev/ktrace/tracer"
)

// A failed attach fails the enable write with the errno the kernel passed
// on, else the nearest one.
func TestAttachErrno(t *testing.T) {
	tests := []struct {
		err  error
		want syscall.Errno
	}{
		{fmt.Errorf("tracer: attaching kprobes/a: %w", syscall.EILSEQ), syscall.EILSEQ},
		{fmt.Errorf("tracer: attaching kprobes/a: symbol vfs_nope: %w", os.ErrNotExist), syscall.ENOENT},
		{fmt.Errorf("tracer: %w", os.ErrPermission), syscall.EPERM},
		{fmt.Errorf("tracer: kprobes/t: %w", tracer.ErrNotSupported), syscall.EINVAL},
		{errors.New("tracer: no probes to attach"), syscall.EINVAL},
	}
	for _, tt := range tests {
		if got := attachErrno(tt.err); got != tt.want {
			t.Errorf("attachErrno(%v) = %v, want %v", tt.err, got, tt.want)
		}
	}
}

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
	if _, ok := w.fs.Backend().(*liveBackend); ok {
		t.Error("live backend for the embedded model")
	}
}
