package fusefs_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/ktrace-dev/ktrace/fusefs"
	"github.com/ktrace-dev/ktrace/internal/vmtest"
)

// The tracefs conformance suite: testdata/tracefs-tests/*.sh, shell scripts
// in the style of the kernel's ftrace selftests. Each runs in a tracefs
// directory from a clean state (no dynamic events, empty error_log) and
// passes or fails by its exit status. The same scripts run against three
// targets, on both pinned kernels: `ktrace sh`, a `ktrace mount` driven by
// real shells, and the kernel's own tracefs in the VM, which is what the
// scripts' expectations were taken from.

// suiteScripts lists the conformance scripts by name.
func suiteScripts(t *testing.T) (dir string, names []string) {
	t.Helper()
	root, err := vmtest.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir = filepath.Join(root, "testdata", "tracefs-tests")
	ms, err := filepath.Glob(filepath.Join(dir, "*.sh"))
	if err != nil || len(ms) == 0 {
		t.Fatalf("no scripts in %s: %v", dir, err)
	}
	for _, m := range ms {
		names = append(names, filepath.Base(m))
	}
	sort.Strings(names)
	return dir, names
}

// TestSuiteKtraceSh runs every script with `ktrace --kernel SNAPSHOT sh`.
func TestSuiteKtraceSh(t *testing.T) {
	dir, names := suiteScripts(t)
	bin := ktraceBinary(t)
	for _, k := range kernelNames {
		kdir := snapshotDir(t, k)
		pass := 0
		for _, name := range names {
			cmd := exec.Command(bin, "--kernel", kdir, "sh", filepath.Join(dir, name))
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Errorf("ktrace sh %s on %s: %v\n%s", name, k, err, out)
				continue
			}
			pass++
		}
		t.Logf("tracefs conformance: %d/%d scripts pass on ktrace sh (%s)", pass, len(names), k)
	}
}

// TestSuiteMount runs every script with busybox sh, the VM's shell, in a
// fresh `ktrace mount` (fusefs over a new registry). The scripts recognise
// errnos by busybox's messages (dash's echo reports every failed write as
// "I/O error", bash's printf writes line by line); TestRealShells covers
// bash and dash.
func TestSuiteMount(t *testing.T) {
	requireFUSE(t)
	dir, names := suiteScripts(t)
	shells := [][]string{{shell(t, "busybox"), "sh"}}
	for _, k := range kernelNames {
		for _, sh := range shells {
			pass := 0
			for _, name := range names {
				mnt, unmount := mountWorld(t, newWorld(t, k), fusefs.Options{})
				out, err := inDir(mnt, append(sh, filepath.Join(dir, name))...).CombinedOutput()
				unmount()
				if err != nil {
					t.Errorf("%s %s on a %s mount: %v\n%s", filepath.Base(sh[0]), name, k, err, out)
					continue
				}
				pass++
			}
			t.Logf("tracefs conformance: %d/%d scripts pass on ktrace mount (%s, %s)", pass, len(names), k, filepath.Base(sh[0]))
		}
	}
}

// vmRunner runs each script under /t in a clean tracefs and prints
// "@@RESULT NAME STATUS" after its output.
const vmRunner = `for t in /t/*.sh; do
	echo 0 > events/enable; echo > dynamic_events; echo > error_log
	sh "$t"
	echo "@@RESULT $(basename "$t") $?"
done
`

// TestSuiteVM runs every script against the real tracefs of the pinned
// kernels.
func TestSuiteVM(t *testing.T) {
	vmtest.Require(t)
	dir, names := suiteScripts(t)
	files := map[string][]byte{}
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join(dir, n))
		if err != nil {
			t.Fatal(err)
		}
		files["/t/"+n] = b
	}
	ks, err := vmtest.PinnedKernels()
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range ks {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		out, err := vmtest.Run(ctx, k, vmtest.Guest{Script: vmRunner, Files: files})
		cancel()
		if err != nil {
			t.Fatalf("%s: %v\n%s", k.Name, err, out)
		}
		res, err := parseResults(string(out))
		if err != nil {
			t.Fatalf("%s: %v", k.Name, err)
		}
		pass := 0
		for _, n := range names {
			r, ok := res[n]
			switch {
			case !ok:
				t.Errorf("%s: %s did not run", k.Name, n)
			case r.status != 0:
				t.Errorf("%s: %s failed (status %d):\n%s", k.Name, n, r.status, r.output)
			default:
				pass++
			}
		}
		t.Logf("tracefs conformance: %d/%d scripts pass on the %s kernel's tracefs", pass, len(names), k.Name)
	}
}

type result struct {
	status int
	output string
}

// parseResults splits the VM runner's output by its @@RESULT lines.
func parseResults(out string) (map[string]result, error) {
	res := map[string]result{}
	var buf strings.Builder
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		l := strings.TrimRight(sc.Text(), "\r")
		if rest, ok := strings.CutPrefix(l, "@@RESULT "); ok {
			var name string
			var st int
			if _, err := fmt.Sscanf(rest, "%s %d", &name, &st); err != nil {
				return nil, fmt.Errorf("bad result line %q: %w", l, err)
			}
			res[name] = result{status: st, output: buf.String()}
			buf.Reset()
			continue
		}
		buf.WriteString(l + "\n")
	}
	if len(res) == 0 {
		return nil, errors.New("no @@RESULT line in the output:\n" + out)
	}
	return res, nil
}
