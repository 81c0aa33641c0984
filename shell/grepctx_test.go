package shell

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestGrepContext: -A, -B, -C, -H and -o print what busybox's grep prints
// (the grep of the shells ktrace sh stands in for), checked against the
// busybox of this machine.
func TestGrepContext(t *testing.T) {
	bb, err := exec.LookPath("busybox")
	if err != nil {
		t.Skip("no busybox on this machine to compare with")
	}
	dir := t.TempDir()
	f := filepath.Join(dir, "log")
	text := "[ 1.0] hist:a: error: Couldn't find field\n  Command: hist:keys=x\n                ^\n[ 2.0] other\n  Command: y\nz\nhist:a: error: again\nlast\n"
	if err := os.WriteFile(f, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	g := filepath.Join(dir, "g")
	if err := os.WriteFile(g, []byte("on x(\n# comment\noff y(\nw: u32=1 u32=31 u32=\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"hist:a: error:", "-A", "3", f},
		{"-A1", "error", f},
		{"-B", "2", "Command", f},
		{"-C1", "other", f},
		{"-n", "-A", "1", "error", f},
		{"-H", ":on[^:]*(", g},
		{"-Hv", "^#", g},
		{"-h", "x", g, f},
		{"-c", "-A", "2", "error", f},
		{"-o", "u32=[0-9]*", g},
		{"-on", "[a-z]*:", f},
		{"-oE", "e|er|err", f},
		{"-ov", "x", g},
		{"-oH", "(", g},
		{"-oc", "o", g},
	} {
		want, _ := exec.Command(bb, append([]string{"grep"}, args...)...).Output()
		script := "grep"
		for _, a := range args {
			script += " '" + a + "'"
		}
		_, got, errOut := run(t, script)
		if got != string(want) {
			t.Errorf("grep %q: got\n%s(stderr %q)\nbusybox's:\n%s", args, got, errOut, want)
		}
	}
}
