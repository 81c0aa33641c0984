package fusefs_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ktrace-dev/ktrace/fusefs"
)

// TestRealShells drives a mount with bash, dash and busybox sh: the
// commands users type at a real tracefs. Expectations are the kernel's
// (tools/vmsh on 6.1 and 6.12): a good line is accepted, a bad one fails
// the write (status 1) and lands in error_log, '>' clears, '-:' removes,
// '>' while an event is enabled fails (EBUSY) and removes nothing.
func TestRealShells(t *testing.T) {
	requireFUSE(t)
	for _, sh := range [][]string{{"bash"}, {"dash"}, {"busybox", "sh"}} {
		p := shell(t, sh[0])
		for _, k := range kernelNames {
			t.Run(sh[0]+"/"+k, func(t *testing.T) {
				mnt, _ := mountWorld(t, newWorld(t, k), fusefs.Options{})
				run := func(script string) (int, string) {
					cmd := inDir(mnt, append(append([]string{p}, sh[1:]...), "-c", script)...)
					out, err := cmd.CombinedOutput()
					var ee *exec.ExitError
					if errors.As(err, &ee) {
						return ee.ExitCode(), string(out)
					}
					if err != nil {
						t.Fatalf("%s: %v", script, err)
					}
					return 0, string(out)
				}
				read := func(name string) string {
					b, err := os.ReadFile(filepath.Join(mnt, name))
					if err != nil {
						t.Fatalf("read %s: %v", name, err)
					}
					return string(b)
				}
				if st, out := run(`echo 'p:myev do_sys_openat2 $arg1' >> kprobe_events`); st != 0 {
					t.Fatalf("adding myev: status %d: %s", st, out)
				}
				if !strings.HasPrefix(read("kprobe_events"), "p:kprobes/myev do_sys_openat2 ") {
					t.Errorf("kprobe_events = %q", read("kprobe_events"))
				}
				if _, err := os.Stat(filepath.Join(mnt, "events/kprobes/myev/format")); err != nil {
					t.Errorf("format file: %v", err)
				}
				if st, _ := run(`echo 'p:bad vfs_read %zz' >> kprobe_events`); st != 1 {
					t.Errorf("bad line: status %d, want 1", st)
				}
				if got := read("error_log"); !strings.Contains(got, "trace_kprobe: error: Invalid register name\n  Command: p:bad vfs_read %zz\n") {
					t.Errorf("error_log = %q", got)
				}
				if st, out := run(`echo 1 > events/kprobes/myev/enable`); st != 0 {
					t.Fatalf("enable: status %d: %s", st, out)
				}
				if st, _ := run(`: > kprobe_events`); st == 0 {
					t.Errorf("truncating with an enabled event succeeded")
				}
				if st, _ := run(`echo -:myev >> kprobe_events`); st == 0 {
					t.Errorf("removing an enabled event succeeded")
				}
				if !strings.Contains(read("kprobe_events"), "myev") {
					t.Errorf("myev gone while enabled")
				}
				if st, out := run(`echo 0 > events/kprobes/myev/enable && echo -:myev >> kprobe_events`); st != 0 {
					t.Errorf("disable and remove: status %d: %s", st, out)
				}
				if st, out := run(`echo 'p:a vfs_read' >> kprobe_events && echo 'p:b vfs_write' >> kprobe_events && echo > kprobe_events`); st != 0 {
					t.Errorf("add two and truncate: status %d: %s", st, out)
				}
				if got := read("kprobe_events"); got != "" {
					t.Errorf("after '>': kprobe_events = %q", got)
				}
			})
		}
	}
}

// TestErrnos checks the errno of each failing write(2) and open(2) through
// the mount (the shells above only show exit statuses).
func TestErrnos(t *testing.T) {
	requireFUSE(t)
	for _, k := range kernelNames {
		t.Run(k, func(t *testing.T) {
			mnt, _ := mountWorld(t, newWorld(t, k), fusefs.Options{})
			kp := filepath.Join(mnt, "kprobe_events")
			write := func(line string) error {
				f, err := os.OpenFile(kp, os.O_WRONLY|os.O_APPEND, 0)
				if err != nil {
					return err
				}
				defer f.Close()
				_, err = f.Write([]byte(line))
				return err
			}
			for _, c := range []struct {
				line string
				want error
			}{
				{"p:ev1 vfs_read\n", nil},
				{"p:ev1 vfs_read\n", syscall.EEXIST},
				{"p:ev2 vfs_read %zz\n", syscall.EINVAL},
				{"x:ev3 vfs_read\n", syscall.EINVAL},
				{"-:nosuch\n", syscall.ENOENT},
				{"p:ev4 vfs_read " + strings.Repeat("x", 4100) + "\n", syscall.EINVAL},
			} {
				if err := write(c.line); !errors.Is(err, c.want) && !(err == nil && c.want == nil) {
					t.Errorf("write %.40q: %v, want %v", c.line, err, c.want)
				}
			}
			if err := os.WriteFile(filepath.Join(mnt, "events/kprobes/ev1/enable"), []byte("1\n"), 0); err != nil {
				t.Fatal(err)
			}
			if _, err := os.OpenFile(kp, os.O_WRONLY|os.O_TRUNC, 0); !errors.Is(err, syscall.EBUSY) {
				t.Errorf("O_TRUNC with an enabled event: %v, want EBUSY", err)
			}
			if err := write("-:ev1\n"); !errors.Is(err, syscall.EBUSY) {
				t.Errorf("removing an enabled event: %v, want EBUSY", err)
			}
			if _, err := os.OpenFile(filepath.Join(mnt, "newfile"), os.O_WRONLY|os.O_CREATE, 0o644); !errors.Is(err, syscall.EACCES) {
				t.Errorf("creating a file: %v, want EACCES", err)
			}
			if err := os.WriteFile(filepath.Join(mnt, "README"), []byte("x"), 0); !errors.Is(err, syscall.EINVAL) {
				t.Errorf("writing README: %v, want EINVAL", err)
			}
		})
	}
}

// TestLargeWriteSplit writes 300 KiB of definitions in one write(2): FUSE
// delivers it as several requests, cut at 128 KiB or page boundaries in
// the middle of lines. Every line must arrive whole, as the kernel would
// run them from one write.
func TestLargeWriteSplit(t *testing.T) {
	requireFUSE(t)
	w := newWorld(t, "6.12")
	mnt, _ := mountWorld(t, w, fusefs.Options{})
	var buf bytes.Buffer
	n := 0
	for buf.Len() < 300<<10 {
		fmt.Fprintf(&buf, "p:s%06d vfs_read\n", n)
		n++
	}
	f, err := os.OpenFile(filepath.Join(mnt, "kprobe_events"), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	m, err := syscall.Write(int(f.Fd()), buf.Bytes())
	if err != nil || m != buf.Len() {
		t.Fatalf("write = %d, %v; want %d", m, err, buf.Len())
	}
	if err := f.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	if got := len(w.reg.Events()); got != n {
		t.Errorf("%d events, want %d", got, n)
	}
	for i, ev := range w.reg.Events() {
		if want := fmt.Sprintf("s%06d", i); ev.Name != want {
			t.Fatalf("event %d is %s, want %s", i, ev.Name, want)
		}
	}
}

// TestConcurrentAppends has 8 processes append 200 definitions each at the
// same time; none may be lost or corrupted, and readers see whole lines.
func TestConcurrentAppends(t *testing.T) {
	requireFUSE(t)
	bb := shell(t, "busybox")
	w := newWorld(t, "6.12")
	mnt, _ := mountWorld(t, w, fusefs.Options{})
	const procs, lines = 8, 200
	var cmds []*exec.Cmd
	var outs []*bytes.Buffer
	for p := 0; p < procs; p++ {
		script := fmt.Sprintf(`i=0; while [ $i -lt %d ]; do echo "p:w%d_$i vfs_read a=%%di:u64" >> kprobe_events || exit 1; i=$((i+1)); done`, lines, p)
		cmd := inDir(mnt, bb, "sh", "-c", script)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		cmds, outs = append(cmds, cmd), append(outs, &out)
	}
	for _, c := range cmds {
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
	}
	// Read while they write: every read sees whole lines.
	stop := make(chan struct{})
	var readErr error
	var rwg sync.WaitGroup
	rwg.Add(1)
	go func() {
		defer rwg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			b, err := os.ReadFile(filepath.Join(mnt, "kprobe_events"))
			if err != nil {
				readErr = err
				return
			}
			for _, l := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
				if l != "" && !strings.HasSuffix(l, " vfs_read a=%di:u64") {
					readErr = fmt.Errorf("torn line %q", l)
					return
				}
			}
		}
	}()
	for i, c := range cmds {
		if err := c.Wait(); err != nil {
			t.Errorf("writer %d: %v: %s", i, err, outs[i])
		}
	}
	close(stop)
	rwg.Wait()
	if readErr != nil {
		t.Error(readErr)
	}
	b, err := os.ReadFile(filepath.Join(mnt, "kprobe_events"))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, l := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		got[l] = true
	}
	for p := 0; p < procs; p++ {
		for i := 0; i < lines; i++ {
			if l := fmt.Sprintf("p:kprobes/w%d_%d vfs_read a=%%di:u64", p, i); !got[l] {
				t.Fatalf("missing %q", l)
			}
		}
	}
	if len(got) != procs*lines {
		t.Errorf("%d lines, want %d", len(got), procs*lines)
	}
}

// TestConcurrentEnableRemove races enabling, disabling, removing and
// re-adding events through the mount (run it with -race). Every operation
// either succeeds or fails with the kernel's errno for the state it met.
func TestConcurrentEnableRemove(t *testing.T) {
	requireFUSE(t)
	w := newWorld(t, "6.12")
	mnt, _ := mountWorld(t, w, fusefs.Options{})
	kp := filepath.Join(mnt, "kprobe_events")
	appendLine := func(line string) error {
		f, err := os.OpenFile(kp, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = f.WriteString(line + "\n")
		return err
	}
	const n = 8
	for i := 0; i < n; i++ {
		if err := appendLine(fmt.Sprintf("p:c%d vfs_read", i)); err != nil {
			t.Fatal(err)
		}
	}
	allowed := func(err error, errs ...syscall.Errno) bool {
		if err == nil {
			return true
		}
		for _, e := range errs {
			if errors.Is(err, e) {
				return true
			}
		}
		return false
	}
	var wg sync.WaitGroup
	errc := make(chan error, 1000)
	for i := 0; i < n; i++ {
		i := i
		wg.Add(3)
		go func() { // toggles the event
			defer wg.Done()
			for j := 0; j < 50; j++ {
				err := os.WriteFile(filepath.Join(mnt, fmt.Sprintf("events/kprobes/c%d/enable", i)), []byte(fmt.Sprint(j%2)+"\n"), 0)
				if !allowed(err, syscall.ENOENT, syscall.ENODEV) {
					errc <- fmt.Errorf("enable c%d: %w", i, err)
				}
			}
		}()
		go func() { // removes and re-adds it
			defer wg.Done()
			for j := 0; j < 50; j++ {
				if err := appendLine(fmt.Sprintf("-:c%d", i)); !allowed(err, syscall.EBUSY, syscall.ENOENT) {
					errc <- fmt.Errorf("remove c%d: %w", i, err)
				}
				if err := appendLine(fmt.Sprintf("p:c%d vfs_read", i)); !allowed(err, syscall.EEXIST) {
					errc <- fmt.Errorf("add c%d: %w", i, err)
				}
			}
		}()
		go func() { // reads the group enable file and the profile
			defer wg.Done()
			for j := 0; j < 50; j++ {
				os.ReadFile(filepath.Join(mnt, "events/kprobes/enable"))
				os.ReadFile(filepath.Join(mnt, "kprobe_profile"))
			}
		}()
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Error(err)
	}
	// The registry and the files still agree.
	b, err := os.ReadFile(kp)
	if err != nil {
		t.Fatal(err)
	}
	if lines := strings.Count(string(b), "\n"); lines != len(w.reg.Events()) {
		t.Errorf("kprobe_events has %d lines, the registry %d events", lines, len(w.reg.Events()))
	}
}

// startMount runs `ktrace mount [FLAGS] DIR` as its own process and waits
// until the mount serves files.
func startMount(t *testing.T, bin, kdir, dir string, flags ...string) (*exec.Cmd, *syncBuffer) {
	t.Helper()
	cmd := exec.Command(bin, append(append([]string{"--kernel", kdir, "mount"}, flags...), dir)...)
	cmd.Dir = "/"
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	// A killed mount can leave a helper (fusermount) holding its output
	// pipe: Wait must not wait for that helper's end.
	cmd.WaitDelay = 2 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if !waitFor(10*time.Second, func() bool { _, err := os.Stat(filepath.Join(dir, "README")); return err == nil }) {
		killAndWait(t, cmd)
		t.Fatalf("mount did not come up: %s", out.String())
	}
	return cmd, out
}

// syncBuffer is a bytes.Buffer safe for the writes of exec's copying
// goroutine and the test's reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestMountSignals: SIGINT and SIGTERM end `ktrace mount` with status 0,
// no mount and no event left; after SIGKILL the kernel leaves a dead mount
// (ENOTCONN) that the next `ktrace mount` on the directory clears.
func TestMountSignals(t *testing.T) {
	requireFUSE(t)
	bin := ktraceBinary(t)
	kdir := snapshotDir(t, "6.12")
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			dir := t.TempDir()
			cmd, out := startMount(t, bin, kdir, dir)
			if err := os.WriteFile(filepath.Join(dir, "kprobe_events"), []byte("p:myev vfs_read\n"), 0); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "events/kprobes/myev/enable"), []byte("1\n"), 0); err != nil {
				t.Fatal(err)
			}
			cmd.Process.Signal(sig)
			if err := cmd.Wait(); err != nil {
				t.Fatalf("ktrace mount after %v: %v\n%s", sig, err, out)
			}
			if mounted(t, dir) {
				t.Errorf("%s still mounted", dir)
			}
			ents, err := os.ReadDir(dir)
			if err != nil || len(ents) != 0 {
				t.Errorf("mount point after unmount: %v, %v", ents, err)
			}
		})
	}
	t.Run("SIGKILL", func(t *testing.T) {
		dir := t.TempDir()
		cmd, _ := startMount(t, bin, kdir, dir)
		if err := os.WriteFile(filepath.Join(dir, "kprobe_events"), []byte("p:myev vfs_read\n"), 0); err != nil {
			t.Fatal(err)
		}
		killAndWait(t, cmd)
		var st syscall.Stat_t
		if err := syscall.Stat(dir, &st); !errors.Is(err, syscall.ENOTCONN) {
			t.Fatalf("stat of the dead mount: %v, want ENOTCONN", err)
		}
		cmd2, out := startMount(t, bin, kdir, dir)
		defer func() {
			cmd2.Process.Signal(syscall.SIGTERM)
			if err := cmd2.Wait(); err != nil {
				t.Errorf("second mount: %v\n%s", err, out)
			}
			if mounted(t, dir) {
				t.Errorf("%s still mounted", dir)
			}
		}()
		if !strings.Contains(out.String(), "cleared a dead mount") {
			t.Errorf("no notice of the cleared mount: %s", out)
		}
		b, err := os.ReadFile(filepath.Join(dir, "kprobe_events"))
		if err != nil || len(b) != 0 {
			t.Errorf("kprobe_events of the new mount = %q, %v; want empty", b, err)
		}
	})
}

// TestBigWriteLikeKernel repeats a VM transcript (6.12, `dd bs=1M` into
// kprobe_events, one write(2)): 500 lines and a last one without newline,
// 7906 bytes across the kernel's 4095-byte chunks, all apply; in a write
// whose line 301 is bad, the 300 before it stay, the write fails with
// EINVAL and the line after it never runs.
func TestBigWriteLikeKernel(t *testing.T) {
	requireFUSE(t)
	w := newWorld(t, "6.12")
	mnt, _ := mountWorld(t, w, fusefs.Options{})
	kp := filepath.Join(mnt, "kprobe_events")
	oneWrite := func(data []byte) error {
		f, err := os.OpenFile(kp, os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		n, err := syscall.Write(int(f.Fd()), data)
		if err == nil && n != len(data) {
			t.Fatalf("short write %d of %d", n, len(data))
		}
		return err
	}
	var b bytes.Buffer
	for i := 0; i < 500; i++ {
		fmt.Fprintf(&b, "p:c%d vfs_read\n", i)
	}
	b.WriteString("p:last vfs_write")
	if b.Len() != 7906 {
		t.Fatalf("test data is %d bytes, the VM's was 7906", b.Len())
	}
	if err := oneWrite(b.Bytes()); err != nil {
		t.Fatalf("write: %v", err)
	}
	if n := len(w.reg.Events()); n != 501 {
		t.Errorf("%d events, want 501", n)
	}
	f, err := os.OpenFile(kp, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	b.Reset()
	for i := 0; i < 300; i++ {
		fmt.Fprintf(&b, "p:d%d vfs_read\n", i)
	}
	b.WriteString("p:bad vfs_read %zz\np:after vfs_read\n")
	if err := oneWrite(b.Bytes()); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("write with a bad line: %v, want EINVAL", err)
	}
	if n := len(w.reg.Events()); n != 300 {
		t.Errorf("%d events, want 300", n)
	}
	if w.reg.Event("kprobes", "after") != nil {
		t.Errorf("the line after the bad one ran")
	}
}

// TestTracePipeWithoutBackend documents trace_pipe on a mount without a
// probe backend: a read ends at once with end of file, even with an event
// enabled (the kernel would block until an event arrives).
func TestTracePipeWithoutBackend(t *testing.T) {
	requireFUSE(t)
	mnt, _ := mountWorld(t, newWorld(t, "6.12"), fusefs.Options{})
	if err := os.WriteFile(filepath.Join(mnt, "kprobe_events"), []byte("p:myev vfs_read\n"), 0); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(mnt, "events/kprobes/myev/enable"), []byte("1\n"), 0); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		b, err := os.ReadFile(filepath.Join(mnt, "trace_pipe"))
		if err == nil && len(b) != 0 {
			err = fmt.Errorf("trace_pipe read %q", b)
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("trace_pipe read blocked")
	}
	os.WriteFile(filepath.Join(mnt, "events/kprobes/myev/enable"), []byte("0\n"), 0)
}

// TestMountSignalWhileBusy: SIGTERM while another process has its working
// directory in the mount still ends `ktrace mount` and removes the mount
// from the namespace (a lazy unmount after a second of EBUSY), without
// waiting for that process to leave.
func TestMountSignalWhileBusy(t *testing.T) {
	requireFUSE(t)
	bin := ktraceBinary(t)
	dir := t.TempDir()
	cmd, out := startMount(t, bin, snapshotDir(t, "6.12"), dir)
	busy := exec.Command("/bin/sh", "-c", `cd "$0" && exec sleep 60`, dir)
	if err := busy.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { busy.Process.Kill(); busy.Wait() }()
	if !waitFor(5*time.Second, func() bool {
		cwd, _ := os.Readlink(fmt.Sprintf("/proc/%d/cwd", busy.Process.Pid))
		return cwd == dir
	}) {
		t.Fatal("the busy process did not enter the mount")
	}
	start := time.Now()
	cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("ktrace mount: %v\n%s", err, out)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("ktrace mount took %v to exit: it waited for the busy process", d)
	}
	if mounted(t, dir) {
		t.Errorf("%s still mounted", dir)
	}
}

// TestMountDaemon: `ktrace mount --daemon DIR` returns once DIR is mounted,
// printing the server's pid; SIGTERM to that pid unmounts.
func TestMountDaemon(t *testing.T) {
	requireFUSE(t)
	bin := ktraceBinary(t)
	dir := t.TempDir()
	cmd := exec.Command(bin, "--kernel", snapshotDir(t, "6.12"), "mount", "--daemon", dir)
	cmd.Dir = "/"
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("ktrace mount --daemon: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatalf("output %q is not a pid", out)
	}
	defer syscall.Kill(pid, syscall.SIGKILL)
	if !mounted(t, dir) {
		t.Fatalf("%s not mounted when --daemon returned", dir)
	}
	if err := os.WriteFile(filepath.Join(dir, "kprobe_events"), []byte("p:myev vfs_read\n"), 0); err != nil {
		t.Fatal(err)
	}
	syscall.Kill(pid, syscall.SIGTERM)
	if !waitFor(10*time.Second, func() bool { return !mounted(t, dir) }) {
		t.Errorf("%s still mounted after SIGTERM", dir)
	}
}

// mountsOn counts the mounts on dir in /proc/self/mountinfo.
func mountsOn(t *testing.T, dir string) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) > 4 && f[4] == dir {
			n++
		}
	}
	return n
}

// startDaemon runs `ktrace mount --daemon [FLAGS] DIR` and returns the
// server's pid; the server is killed when the test ends.
func startDaemon(t *testing.T, bin, kdir, dir string, flags ...string) int {
	t.Helper()
	cmd := exec.Command(bin, append(append([]string{"--kernel", kdir, "mount", "--daemon"}, flags...), dir)...)
	cmd.Dir = "/"
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("ktrace mount --daemon: %v\n%s", err, stderr.String())
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatalf("output %q is not a pid", out)
	}
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
	return pid
}

// TestMountDaemonAfterKill: after kill -9 of a mount, `ktrace mount
// --daemon DIR` returns only once its own mount answers (the first access
// works, no ENOTCONN), the dead mount is gone, and SIGTERM to the printed
// pid leaves nothing mounted on DIR.
func TestMountDaemonAfterKill(t *testing.T) {
	requireFUSE(t)
	bin := ktraceBinary(t)
	kdir := snapshotDir(t, "6.12")
	dir := t.TempDir()
	for round := 0; round < 3; round++ {
		cmd, _ := startMount(t, bin, kdir, dir)
		// At once, while the server may still be settling in (see
		// fusefs.Mount): the process must still end.
		killAndWait(t, cmd)
		var st syscall.Stat_t
		if err := syscall.Stat(dir, &st); !errors.Is(err, syscall.ENOTCONN) {
			t.Fatalf("stat of the dead mount: %v, want ENOTCONN", err)
		}
		pid := startDaemon(t, bin, kdir, dir)
		// At once, with no retry: the daemon said it was ready.
		if b, err := os.ReadFile(filepath.Join(dir, "README")); err != nil || len(b) == 0 {
			t.Fatalf("round %d: first read after --daemon returned: %d bytes, %v", round, len(b), err)
		}
		if n := mountsOn(t, dir); n != 1 {
			t.Errorf("round %d: %d mounts on %s, want 1 (the dead one cleared)", round, n, dir)
		}
		syscall.Kill(pid, syscall.SIGTERM)
		if !waitFor(10*time.Second, func() bool { return mountsOn(t, dir) == 0 }) {
			t.Fatalf("round %d: %d mounts left on %s after SIGTERM", round, mountsOn(t, dir), dir)
		}
		if err := syscall.Stat(dir, &st); err != nil {
			t.Fatalf("round %d: stat after SIGTERM: %v", round, err)
		}
	}
}

// TestMountRefusesLiveMount: `ktrace mount DIR` (foreground or --daemon)
// on a live ktrace mount fails with a clear message and leaves the live
// one alone, unstacked.
func TestMountRefusesLiveMount(t *testing.T) {
	requireFUSE(t)
	bin := ktraceBinary(t)
	kdir := snapshotDir(t, "6.12")
	dir := t.TempDir()
	first, out := startMount(t, bin, kdir, dir)
	defer func() {
		first.Process.Signal(syscall.SIGTERM)
		if err := first.Wait(); err != nil {
			t.Errorf("first mount: %v\n%s", err, out)
		}
	}()
	appendFile(t, filepath.Join(dir, "kprobe_events"), "p:myev vfs_read\n")
	for _, flags := range [][]string{nil, {"--daemon"}} {
		cmd := exec.Command(bin, append(append([]string{"--kernel", kdir, "mount"}, flags...), dir)...)
		cmd.Dir = "/"
		o, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(string(o), "is already a live ktrace mount") {
			t.Errorf("mount %v over a live mount: %v, want exit 1 and a clear message:\n%s", flags, err, o)
		}
	}
	if n := mountsOn(t, dir); n != 1 {
		t.Errorf("%d mounts on %s, want 1", n, dir)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "kprobe_events")); err != nil || string(b) != "p:kprobes/myev vfs_read\n" {
		t.Errorf("the live mount's kprobe_events: %q, %v", b, err)
	}
}

// TestMountPointErrors: a missing mount point and a file get their own
// messages, naming the directory (not fusermount).
func TestMountPointErrors(t *testing.T) {
	bin := ktraceBinary(t)
	kdir := snapshotDir(t, "6.12")
	tmp := t.TempDir()
	file := filepath.Join(tmp, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ dir, want string }{
		{filepath.Join(tmp, "missing"), "ktrace: mount: " + filepath.Join(tmp, "missing") + " does not exist; create the directory first"},
		{filepath.Join(tmp, "missing", "sub"), "ktrace: mount: " + filepath.Join(tmp, "missing", "sub") + " does not exist"},
		{file, "ktrace: mount: " + file + " is not a directory"},
	} {
		for _, flags := range [][]string{nil, {"--daemon"}} {
			cmd := exec.Command(bin, append(append([]string{"--kernel", kdir, "mount"}, flags...), c.dir)...)
			o, err := cmd.CombinedOutput()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(string(o), c.want) || strings.Contains(string(o), "fusermount") {
				t.Errorf("mount %v %s: %v:\n%s\nwant exit 1 and %q", flags, c.dir, err, o, c.want)
			}
		}
	}
}
