package fusefs_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/ktrace-dev/ktrace/events"
	"github.com/ktrace-dev/ktrace/fusefs"
	"github.com/ktrace-dev/ktrace/grammar"
	"github.com/ktrace-dev/ktrace/internal/vmtest"
	"github.com/ktrace-dev/ktrace/tracefs"
)

// selectionRecorder is a backend whose function tracer notes how many
// functions each selection it is given holds.
type selectionRecorder struct {
	tracefs.Backend
	mu    sync.Mutex
	sizes []int
}

func (r *selectionRecorder) SetFunctionTrace(t *tracefs.FunctionTrace) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if t != nil {
		r.sizes = append(r.sizes, len(t.Funcs))
	}
	return nil
}

// TestEditNeverEmpty: `echo WORD > set_ftrace_filter` through the mount,
// with the function tracer running, goes from the old selection straight
// to WORD's, as on the kernel, whose edit is put in place at the close.
// busybox sh and dash close their first descriptor of the file (a FLUSH)
// after dup2 and before they write: committing the truncated edit there
// selected every function for a moment (40,202 attached in the guest,
// which also exposed the guest kernel's text patching to TCG).
func TestEditNeverEmpty(t *testing.T) {
	m := vmtest.Model(t, "6.12")
	major, minor, _ := m.KernelVersion()
	d := grammar.DialectFor(major, minor)
	reg := events.NewRegistry(m, d)
	rec := &selectionRecorder{Backend: tracefs.NewRegistryBackend(reg)}
	fsys := tracefs.New(rec, tracefs.Options{Major: d.Major, Minor: d.Minor, CPUs: m.CPUs(), Functions: m.FtraceRecords})
	dir, _ := mountWorld(t, &world{reg: reg, fs: fsys}, fusefs.Options{})
	for _, sh := range [][]string{{"busybox", "sh"}, {"dash"}, {"bash"}} {
		t.Run(sh[0], func(t *testing.T) {
			script := `echo vfs_read > set_ftrace_filter && echo function > current_tracer &&
echo 'ksys_read ksys_write' > set_ftrace_filter && echo vfs_write >> set_ftrace_filter &&
echo nop > current_tracer`
			rec.mu.Lock()
			rec.sizes = nil
			rec.mu.Unlock()
			out, err := inDir(dir, append([]string{shell(t, sh[0])}, append(sh[1:], "-c", script)...)...).CombinedOutput()
			if err != nil {
				t.Fatalf("%v: %s", err, out)
			}
			rec.mu.Lock()
			got := fmt.Sprint(rec.sizes)
			rec.mu.Unlock()
			// vfs_read, then ksys_read and ksys_write, then vfs_write too.
			if want := "[1 2 3]"; got != want {
				t.Errorf("selections the tracer was given: %s, want %s", got, want)
			}
		})
	}
}
