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

// TestGoldenScriptsSh runs scripts whose output on each kernel's tracefs
// was recorded in the VM (DIR/KERNEL.out beside DIR/filters.sh) through
// `ktrace --kernel SNAPSHOT sh`, where the files are emulated, and
// compares the outputs:
//   - stack: the stack tracer's files with the tracer off
//     (stack_max_size's and stack_trace_filter's writes, readback and
//     errors; TestStackTracerVM checks the kernels still print it);
//   - graphfilter: set_graph_function, set_graph_notrace and
//     max_graph_depth (globs, "!", the hash order of the readback, the
//     words they refuse; recorded on both kernels in the VM);
//   - marker: trace_marker writes longer than one entry holds, split
//     by the kernel's short writes (1,024 bytes on 6.1, 4,054 on 6.12).
func TestGoldenScriptsSh(t *testing.T) {
	root, err := vmtest.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	bin := ktraceBinary(t)
	for _, script := range []string{"stack", "graphfilter", "marker", "subbuf"} {
		dir := filepath.Join(root, "testdata", script)
		for _, k := range kernelNames {
			t.Run(script+"/"+k, func(t *testing.T) {
				want, err := os.ReadFile(filepath.Join(dir, k+".out"))
				if err != nil {
					t.Fatal(err)
				}
				cmd := exec.Command(bin, "--kernel", snapshotDir(t, k), "sh", filepath.Join(dir, "filters.sh"))
				// The script's messages go to the same output as in
				// the VM.
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
