package fusefs_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ktrace-dev/ktrace/events"
	"github.com/ktrace-dev/ktrace/fusefs"
	"github.com/ktrace-dev/ktrace/grammar"
	"github.com/ktrace-dev/ktrace/internal/vmtest"
	"github.com/ktrace-dev/ktrace/tracefs"
)

// kernelNames are the pinned kernels every target is checked against.
var kernelNames = []string{"6.1", "6.12"}

// snapshotDir is the pinned kernel snapshot directory of name, skipping the
// test when the snapshots are missing.
func snapshotDir(t testing.TB, name string) string {
	t.Helper()
	dir, err := vmtest.KernelsDir()
	if err != nil {
		t.Skipf("kernel snapshots: %v", err)
	}
	d := filepath.Join(dir, name)
	if _, err := os.Stat(filepath.Join(d, "kallsyms")); err != nil {
		t.Skipf("kernel snapshot %s missing: %v", name, err)
	}
	return d
}

// world is a fresh registry and tracefs over a pinned kernel, as `ktrace
// sh` and `ktrace mount` build them.
type world struct {
	reg *events.Registry
	fs  *tracefs.FS
}

func newWorld(t testing.TB, name string) *world {
	return newWorldOpts(t, name, tracefs.Options{})
}

// newWorldOpts is newWorld with opts (its release and CPU count are the
// model's).
func newWorldOpts(t testing.TB, name string, opts tracefs.Options) *world {
	m := vmtest.Model(t, name)
	major, minor, _ := m.KernelVersion()
	d := grammar.DialectFor(major, minor)
	reg := events.NewRegistry(m, d)
	opts.Major, opts.Minor, opts.CPUs = d.Major, d.Minor, m.CPUs()
	if opts.Static == nil {
		opts.Static = func() []tracefs.StaticEvent { return tracefs.StaticEvents(m) }
	}
	return &world{reg: reg, fs: tracefs.New(tracefs.NewRegistryBackend(reg), opts)}
}

// requireFUSE skips the test when this process cannot mount FUSE
// filesystems (it needs root and /dev/fuse); under CI=true it fails.
func requireFUSE(t testing.TB) {
	t.Helper()
	why := ""
	if os.Geteuid() != 0 {
		why = "not root"
	} else if _, err := os.Stat("/dev/fuse"); err != nil {
		why = "no /dev/fuse"
	}
	if why == "" {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("FUSE tests required under CI=true: %s", why)
	}
	t.Skipf("FUSE unavailable: %s", why)
}

// mountWorld mounts w on a new temporary directory. The returned function
// unmounts it; it also runs when the test ends.
func mountWorld(t testing.TB, w *world, opts fusefs.Options) (string, func()) {
	t.Helper()
	requireFUSE(t)
	dir := t.TempDir()
	opts.SelfAccess = true // the tests read the mount from this process too
	srv, err := fusefs.Mount(dir, w.fs, opts)
	if err != nil {
		t.Fatalf("mount: %v", err)
	}
	var once sync.Once
	unmount := func() {
		once.Do(func() {
			if err := srv.Unmount(); err != nil {
				t.Errorf("unmount: %v", err)
			}
		})
	}
	t.Cleanup(unmount)
	return dir, unmount
}

var (
	buildOnce sync.Once
	buildBin  string
	buildErr  error
	buildOut  []byte
)

// ktraceBinary builds cmd/ktrace once per test process.
func ktraceBinary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		root, err := vmtest.ModuleRoot()
		if err != nil {
			buildErr = err
			return
		}
		dir, err := os.MkdirTemp("", "ktrace-fusefs-test-")
		if err != nil {
			buildErr = err
			return
		}
		buildBin = filepath.Join(dir, "ktrace")
		cmd := exec.Command("go", "build", "-o", buildBin, "./cmd/ktrace")
		cmd.Dir = root
		buildOut, buildErr = cmd.CombinedOutput()
	})
	if buildErr != nil {
		t.Fatalf("building ktrace: %v\n%s", buildErr, buildOut)
	}
	return buildBin
}

// shell returns the path of a shell program, skipping when it is missing.
func shell(t testing.TB, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Skipf("%s not installed", name)
	}
	return p
}

// inDir runs argv with dir as its working directory. The child changes
// into dir only after it is a separate process: a Go program must not make
// a freshly forked child touch a FUSE mount the same program serves (the
// vfork-style child holds a runtime P until exec, and a garbage collection
// waiting for it would stop the server that the child's chdir waits for).
func inDir(dir string, argv ...string) *exec.Cmd {
	cmd := exec.Command("/bin/sh", append([]string{"-c", `cd "$0" || exit 125; exec "$@"`, dir}, argv...)...)
	cmd.Dir = "/"
	return cmd
}

// mounted reports whether dir is a mount point in /proc/self/mountinfo.
func mounted(t testing.TB, dir string) bool {
	t.Helper()
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range bytes.Split(b, []byte("\n")) {
		f := bytes.Fields(l)
		if len(f) > 4 && string(f[4]) == dir {
			return true
		}
	}
	return false
}

// waitFor polls cond every 20ms for up to d.
func waitFor(d time.Duration, cond func() bool) bool {
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if cond() {
			return true
		}
	}
	return cond()
}

// killAndWait kills cmd's process and waits at most 20 seconds for it to
// end. A FUSE server can get stuck in its own exit (see
// fusefs.Mount); the test then fails instead of hanging.
func killAndWait(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	cmd.Process.Kill()
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatalf("pid %d did not end 20s after SIGKILL (stuck in its exit: state %s)", cmd.Process.Pid, procState(cmd.Process.Pid))
	}
}

// procState is the State line of /proc/PID/status.
func procState(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return err.Error()
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "State:"); ok {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}
