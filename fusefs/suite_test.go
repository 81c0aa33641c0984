package fusefs_test

import (
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/ktrace-dev/ktrace/fusefs"
	"github.com/ktrace-dev/ktrace/internal/conformance"
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
	dir, names, err = conformance.SuiteScripts(root)
	if err != nil {
		t.Fatal(err)
	}
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

// The third target, the kernels' own tracefs, runs in the boot that serves
// the corpus conformance suite: internal/conformance's TestConformanceVM.
