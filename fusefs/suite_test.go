package fusefs_test

import (
	"os"
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

// suiteScripts lists the conformance scripts by name, and those flagged
// for a second run in a tracing instance.
func suiteScripts(t *testing.T) (dir string, names, inst []string) {
	t.Helper()
	root, err := vmtest.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir, names, err = conformance.SuiteScripts(root)
	if err != nil {
		t.Fatal(err)
	}
	inst, err = conformance.InstanceScripts(dir, names)
	if err != nil {
		t.Fatal(err)
	}
	return dir, names, inst
}

// TestSuiteKtraceSh runs every script with `ktrace --kernel SNAPSHOT sh`.
// The scripts flagged for instances run a second time, each in a new
// tracing instance (conformance.InstanceWrapper).
func TestSuiteKtraceSh(t *testing.T) {
	dir, names, inst := suiteScripts(t)
	bin := ktraceBinary(t)
	wrapper := filepath.Join(t.TempDir(), "instance.sh")
	if err := os.WriteFile(wrapper, []byte(conformance.InstanceWrapper), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, k := range kernelNames {
		kdir := snapshotDir(t, k)
		pass := 0
		run := func(what string, args ...string) {
			out, err := exec.Command(bin, append([]string{"--kernel", kdir, "sh"}, args...)...).CombinedOutput()
			if err != nil {
				t.Errorf("ktrace sh %s on %s: %v\n%s", what, k, err, out)
				return
			}
			pass++
		}
		for _, name := range names {
			run(name, filepath.Join(dir, name))
		}
		for _, name := range inst {
			run(name+" in an instance", wrapper, filepath.Join(dir, name))
		}
		t.Logf("tracefs conformance: %d/%d script runs pass on ktrace sh (%s)", pass, len(names)+len(inst), k)
	}
}

// TestSuiteMount runs every script with busybox sh, the VM's shell, in a
// fresh `ktrace mount` (fusefs over a new registry). The scripts recognise
// errnos by busybox's messages (dash's echo reports every failed write as
// "I/O error", bash's printf writes line by line); TestRealShells covers
// bash and dash.
//
// The scripts flagged for instances run a second time, each in a tracing
// instance the shell makes with mkdir and removes with rmdir afterwards.
func TestSuiteMount(t *testing.T) {
	requireFUSE(t)
	dir, names, inst := suiteScripts(t)
	shells := [][]string{{shell(t, "busybox"), "sh"}}
	for _, k := range kernelNames {
		for _, sh := range shells {
			pass := 0
			run := func(what string, args ...string) {
				mnt, unmount := mountWorld(t, newWorld(t, k), fusefs.Options{})
				out, err := inDir(mnt, append(sh, args...)...).CombinedOutput()
				unmount()
				if err != nil {
					t.Errorf("%s %s on a %s mount: %v\n%s", filepath.Base(sh[0]), what, k, err, out)
					return
				}
				pass++
			}
			for _, name := range names {
				run(name, filepath.Join(dir, name))
			}
			for _, name := range inst {
				in := "mkdir instances/ktt && cd instances/ktt && sh " + filepath.Join(dir, name) + "; st=$?; cd ../.. && rmdir instances/ktt && exit $st"
				run(name+" in an instance", "-c", in)
			}
			t.Logf("tracefs conformance: %d/%d script runs pass on ktrace mount (%s, %s)", pass, len(names)+len(inst), k, filepath.Base(sh[0]))
		}
	}
}

// The third target, the kernels' own tracefs, runs in the boot that serves
// the corpus conformance suite: internal/conformance's TestConformanceVM.
