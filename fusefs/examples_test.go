package fusefs_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ktrace-dev/ktrace/fusefs"
	"github.com/ktrace-dev/ktrace/internal/vmtest"
)

// The example sessions in examples/ trace a command through a tracefs:
// the files it opens, its vfs_read latencies, the bytes it writes. In the
// VM they record real events; on ktrace (no probe backend) their
// definitions are checked and no event records into trace.

type example struct {
	script string
	args   string
	// check validates the VM output.
	check func(out string) error
}

var examples = []example{
	{"opens.sh", "dd if=/tmp/ktrace-example.txt of=/dev/null", func(out string) error {
		if !strings.Contains(out, `path="/tmp/ktrace-example.txt"`) {
			return fmt.Errorf("the opened file is not listed")
		}
		return nil
	}},
	{"read-latency.sh", "dd if=/tmp/ktrace-example.txt of=/dev/null", func(out string) error {
		if !regexp.MustCompile(`(?m)^vfs_read ret=6 latency_us=\d+$`).MatchString(out) {
			return fmt.Errorf("no read of the 6-byte file")
		}
		if !regexp.MustCompile(`(?m)^calls=[1-9]\d* avg_latency_us=\d+$`).MatchString(out) {
			return fmt.Errorf("no summary")
		}
		return nil
	}},
	{"write-bytes.sh", "dd if=/dev/zero of=/dev/null bs=1000 count=5", func(out string) error {
		m := regexp.MustCompile(`(?m)^calls=(\d+) bytes=(\d+)$`).FindStringSubmatch(out)
		if m == nil {
			return fmt.Errorf("no summary")
		}
		if n, _ := strconv.Atoi(m[2]); n < 5000 {
			return fmt.Errorf("%s bytes, want at least the 5000 dd wrote", m[2])
		}
		return nil
	}},
}

func examplesDir(t *testing.T) string {
	t.Helper()
	root, err := vmtest.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(root, "examples")
}

// TestExamplesVM runs the examples against the pinned kernels' tracefs.
func TestExamplesVM(t *testing.T) {
	vmtest.Require(t)
	dir := examplesDir(t)
	files := map[string][]byte{"/tmp/ktrace-example.txt": []byte("hello\n")}
	lib, err := os.ReadFile(filepath.Join(dir, "lib.sh"))
	if err != nil {
		t.Fatal(err)
	}
	files["/ex/lib.sh"] = lib
	var script strings.Builder
	for _, ex := range examples {
		b, err := os.ReadFile(filepath.Join(dir, ex.script))
		if err != nil {
			t.Fatal(err)
		}
		files["/ex/"+ex.script] = b
		fmt.Fprintf(&script, "echo '@@EXAMPLE %s'; (cd / && sh /ex/%s %s 2>&1); echo \"@@STATUS $?\"\n", ex.script, ex.script, ex.args)
	}
	script.WriteString("echo '@@LEFT'; cat kprobe_events\n")
	ks, err := vmtest.PinnedKernels()
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range ks {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		out, err := vmtest.Run(ctx, k, vmtest.Guest{Script: script.String(), Files: files})
		cancel()
		if err != nil {
			t.Fatalf("%s: %v\n%s", k.Name, err, out)
		}
		text := strings.ReplaceAll(string(out), "\r", "")
		for _, ex := range examples {
			sec := section(text, "@@EXAMPLE "+ex.script+"\n")
			if !strings.Contains(sec, "@@STATUS 0\n") {
				t.Errorf("%s %s failed:\n%s", k.Name, ex.script, sec)
				continue
			}
			if err := ex.check(sec); err != nil {
				t.Errorf("%s %s: %v:\n%s", k.Name, ex.script, err, sec)
			}
		}
		if left := strings.TrimSpace(section(text, "@@LEFT\n")); left != "" {
			t.Errorf("%s: examples left probes behind: %q", k.Name, left)
		}
	}
}

// section returns the text after marker up to the next "@@" marker line.
func section(text, marker string) string {
	i := strings.Index(text, marker)
	if i < 0 {
		return ""
	}
	rest := text[i+len(marker):]
	if j := strings.Index(rest, "\n@@EXAMPLE "); j >= 0 {
		rest = rest[:j+1]
	}
	if j := strings.Index(rest, "@@LEFT\n"); j >= 0 {
		rest = rest[:j]
	}
	return rest
}

// TestExamplesKtrace runs the examples on `ktrace sh` and on a mount: the
// definitions are accepted, the command runs, nothing is left behind.
func TestExamplesKtrace(t *testing.T) {
	dir := examplesDir(t)
	data := filepath.Join(t.TempDir(), "ktrace-example.txt")
	if err := os.WriteFile(data, []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := ktraceBinary(t)
	for _, k := range kernelNames {
		kdir := snapshotDir(t, k)
		for _, ex := range examples {
			args := strings.Fields(strings.ReplaceAll(ex.args, "/tmp/ktrace-example.txt", data))
			script := filepath.Join(dir, ex.script)
			// ktrace sh starts in the emulated tracefs, where every
			// operand of an external command would name a tracefs path;
			// the examples run their commands from /.
			out, err := exec.Command(bin, append([]string{"--kernel", kdir, "sh", "-c", `cd / && . "$0"`, script}, args...)...).CombinedOutput()
			if err != nil {
				t.Errorf("ktrace sh %s on %s: %v\n%s", ex.script, k, err, out)
			}
			if strings.Contains(string(out), `path="`) {
				t.Errorf("ktrace sh %s on %s recorded events without a backend:\n%s", ex.script, k, out)
			}

			requireFUSE(t)
			w := newWorld(t, k)
			mnt, unmount := mountWorld(t, w, fusefs.Options{})
			cmd := exec.Command(shell(t, "busybox"), append([]string{"sh", script}, args...)...)
			cmd.Dir = "/"
			cmd.Env = append(os.Environ(), "TRACEFS="+mnt)
			out, err = cmd.CombinedOutput()
			unmount()
			if err != nil {
				t.Errorf("mount %s on %s: %v\n%s", ex.script, k, err, out)
			}
			if n := len(w.reg.Events()); n != 0 {
				t.Errorf("mount %s on %s left %d events", ex.script, k, n)
			}
		}
	}
}
