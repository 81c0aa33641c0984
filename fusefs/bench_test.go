package fusefs_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ktrace-dev/ktrace/fusefs"
	"github.com/ktrace-dev/ktrace/internal/vmtest"
)

// benchDefinitions is how many definitions the rate test writes.
const benchDefinitions = 2000

// benchScript returns testdata/tracefs-tests/bench/definitions.sh.
func benchScript(t *testing.T) (path string, text []byte) {
	t.Helper()
	root, err := vmtest.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	path = filepath.Join(root, "testdata", "tracefs-tests", "bench", "definitions.sh")
	text, err = os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return path, text
}

// benchRate parses the script's "definitions=N start=T0 end=T1" line into
// definitions per second.
func benchRate(t *testing.T, target string, out []byte) float64 {
	t.Helper()
	for _, l := range strings.Split(string(out), "\n") {
		var n int
		var t0, t1 float64
		if _, err := fmt.Sscanf(strings.TrimSpace(l), "definitions=%d start=%g end=%g", &n, &t0, &t1); err == nil {
			d := t1 - t0
			if d < 0.01 {
				d = 0.01 // /proc/uptime has 10 ms resolution
			}
			return float64(n) / d
		}
	}
	t.Fatalf("%s: no result line in %q", target, out)
	return 0
}

// TestDefinitionRate runs the same benchmark script (one echo >>
// kprobe_events per definition, busybox sh where the target allows) on
// `ktrace sh`, a `ktrace mount` and the kernels' own tracefs in the VM, and
// logs definitions per second and their ratios. The VM runs under TCG
// emulation, so its figure is the emulated kernel's, not a real machine's.
// Skipped under -short; it checks only that every target completes.
func TestDefinitionRate(t *testing.T) {
	if testing.Short() {
		t.Skip("benchmark skipped in -short mode")
	}
	script, text := benchScript(t)
	arg := fmt.Sprint(benchDefinitions)
	rates := map[string]float64{}
	for _, k := range kernelNames {
		kdir := snapshotDir(t, k)
		out, err := exec.Command(ktraceBinary(t), "--kernel", kdir, "sh", script, arg).CombinedOutput()
		if err != nil {
			t.Fatalf("ktrace sh: %v\n%s", err, out)
		}
		rates["ktrace sh "+k] = benchRate(t, "ktrace sh", out)

		requireFUSE(t)
		mnt, unmount := mountWorld(t, newWorld(t, k), fusefs.Options{})
		out, err = inDir(mnt, shell(t, "busybox"), "sh", script, arg).CombinedOutput()
		unmount()
		if err != nil {
			t.Fatalf("mount: %v\n%s", err, out)
		}
		rates["ktrace mount "+k] = benchRate(t, "mount", out)
	}
	if ok, _ := vmtest.Available(); ok {
		ks, err := vmtest.PinnedKernels()
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range ks {
			ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
			out, err := vmtest.Run(ctx, k, vmtest.Guest{
				Script: "sh /bench.sh " + arg,
				Files:  map[string][]byte{"/bench.sh": text},
			})
			cancel()
			if err != nil {
				t.Fatalf("VM %s: %v\n%s", k.Name, err, out)
			}
			rates["kernel "+k.Name] = benchRate(t, "VM "+k.Name, out)
		}
	} else {
		t.Log("VM unavailable: no kernel figures")
	}
	for _, k := range kernelNames {
		kr := rates["kernel "+k]
		for _, target := range []string{"ktrace sh ", "ktrace mount ", "kernel "} {
			r := rates[target+k]
			line := fmt.Sprintf("%-18s %8.0f definitions/s", target+k, r)
			if kr > 0 {
				line += fmt.Sprintf("  (%.2fx the %s kernel in the VM)", r/kr, k)
			}
			t.Log(line)
		}
	}
}

// BenchmarkMountAppend measures one definition appended and removed
// through the mount per iteration (two write(2) calls from Go, no shell).
func BenchmarkMountAppend(b *testing.B) {
	requireFUSE(b)
	mnt, _ := mountWorld(b, newWorld(b, "6.12"), fusefs.Options{})
	f, err := os.OpenFile(filepath.Join(mnt, "kprobe_events"), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	for i := 0; b.Loop(); i++ {
		if _, err := f.WriteString("p:bench vfs_read\n"); err != nil {
			b.Fatal(err)
		}
		if _, err := f.WriteString("-:bench\n"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkMountRead measures a small file read through the mount per
// iteration: open, read and close of kprobe_events holding one
// definition (five FUSE requests: LOOKUP is cached).
func BenchmarkMountRead(b *testing.B) {
	requireFUSE(b)
	w := newWorld(b, "6.12")
	mnt, _ := mountWorld(b, w, fusefs.Options{})
	name := filepath.Join(mnt, "kprobe_events")
	if err := os.WriteFile(name, []byte("p:bench vfs_read\n"), 0); err != nil {
		b.Fatal(err)
	}
	buf := make([]byte, 4096)
	for b.Loop() {
		fd, err := syscall.Open(name, syscall.O_RDONLY, 0)
		if err != nil {
			b.Fatal(err)
		}
		if n, err := syscall.Read(fd, buf); err != nil || n == 0 {
			b.Fatalf("read = %d, %v", n, err)
		}
		syscall.Close(fd)
	}
}
