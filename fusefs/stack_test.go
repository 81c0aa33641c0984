package fusefs_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ktrace-dev/ktrace/internal/vmtest"
)

// TestStackFilesSh runs testdata/stack/filters.sh (the stack tracer's
// files with the tracer off: stack_max_size's and stack_trace_filter's
// writes, readback and errors) through `ktrace --kernel SNAPSHOT sh`,
// where the stack tracer is emulated, and compares its output with what
// the same script printed on each kernel's tracefs (KERNEL.out, recorded
// in the VM; TestStackTracerVM checks the kernels still print it).
func TestStackFilesSh(t *testing.T) {
	root, err := vmtest.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "testdata", "stack")
	bin := ktraceBinary(t)
	for _, k := range kernelNames {
		t.Run(k, func(t *testing.T) {
			want, err := os.ReadFile(filepath.Join(dir, k+".out"))
			if err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(bin, "--kernel", snapshotDir(t, k), "sh", filepath.Join(dir, "filters.sh"))
			// The script's messages go to the same output as in the VM.
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("ktrace sh: %v\n%s", err, out)
			}
			// Less ktrace's note naming the backend.
			_, got, _ := strings.Cut(string(out), "\n")
			if got != string(want) {
				t.Errorf("ktrace sh differs from the kernel's %s.out:\n%s", k, lineDiff(string(want), got))
			}
		})
	}
}

// lineDiff shows where two texts part: the line number and a few lines of
// each from there.
func lineDiff(want, got string) string {
	wl, gl := strings.Split(want, "\n"), strings.Split(got, "\n")
	i := 0
	for i < len(wl) && i < len(gl) && wl[i] == gl[i] {
		i++
	}
	tail := func(l []string) string { return strings.Join(l[min(i, len(l)):min(i+5, len(l))], "\n") }
	return fmt.Sprintf("line %d:\nwant:\n%s\ngot:\n%s", i+1, tail(wl), tail(gl))
}
