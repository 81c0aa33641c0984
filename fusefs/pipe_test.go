package fusefs_test

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ktrace-dev/ktrace/events"
	"github.com/ktrace-dev/ktrace/fusefs"
	"github.com/ktrace-dev/ktrace/grammar"
	"github.com/ktrace-dev/ktrace/internal/vmtest"
	"github.com/ktrace-dev/ktrace/tracefs"
)

// newRecordingWorld is newWorld with trace_pipe reads that wait, as `ktrace
// mount` builds it over a probe backend; the test records entries itself
// through fs.Record, standing in for the probes' hits.
func newRecordingWorld(t testing.TB, name string) *world {
	m := vmtest.Model(t, name)
	major, minor, _ := m.KernelVersion()
	d := grammar.DialectFor(major, minor)
	reg := events.NewRegistry(m, d)
	fsys := tracefs.New(tracefs.NewRegistryBackend(reg), tracefs.Options{Major: d.Major, Minor: d.Minor, CPUs: m.CPUs(), PipeBlocks: true})
	return &world{reg: reg, fs: fsys}
}

// mountEnabled mounts a recording world with one enabled event, myev.
func mountEnabled(t *testing.T) (*world, string, func()) {
	t.Helper()
	w := newRecordingWorld(t, "6.12")
	mnt, unmount := mountWorld(t, w, fusefs.Options{Debug: os.Getenv("FDEBUG") != ""})
	writeFile(t, filepath.Join(mnt, "kprobe_events"), "p:myev vfs_read\n")
	writeFile(t, filepath.Join(mnt, "events/kprobes/myev/enable"), "1\n")
	return w, mnt, unmount
}

// pipeReaders are the programs the streaming test reads trace_pipe with:
// GNU cat (read(2)) and busybox cat (sendfile(2) first, read(2) after).
func pipeReaders(t *testing.T) map[string][]string {
	r := map[string][]string{}
	if p, err := exec.LookPath("cat"); err == nil {
		r["cat"] = []string{p}
	}
	if p, err := exec.LookPath("busybox"); err == nil {
		r["busybox-cat"] = []string{p, "cat"}
	}
	if len(r) == 0 {
		t.Skip("no cat installed")
	}
	return r
}

// startPipeReader starts argv on mnt/trace_pipe and returns its output
// lines as they come and its exit status once it ends.
func startPipeReader(t *testing.T, mnt string, argv []string) (*exec.Cmd, <-chan string, <-chan error) {
	t.Helper()
	cmd := exec.Command(argv[0], append(argv[1:], filepath.Join(mnt, "trace_pipe"))...)
	cmd.Dir = "/"
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 16)
	exited := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
		exited <- cmd.Wait()
	}()
	t.Cleanup(func() { cmd.Process.Kill() })
	return cmd, lines, exited
}

// waitingIn reports whether pid is asleep (state S or D) for half a
// second: blocked in its trace_pipe read rather than busy or gone.
func waitingIn(pid int) bool {
	return waitFor(5*time.Second, func() bool {
		for i := 0; i < 5; i++ {
			b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
			if err != nil {
				return false
			}
			f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
			if len(f) == 0 || (f[0] != "S" && f[0] != "D") {
				return false
			}
			time.Sleep(100 * time.Millisecond)
		}
		return true
	})
}

func nextLine(t *testing.T, lines <-chan string, what string) string {
	t.Helper()
	select {
	case l, ok := <-lines:
		if !ok {
			t.Fatalf("%s: the reader ended instead", what)
		}
		return l
	case <-time.After(5 * time.Second):
		t.Fatalf("%s: nothing read in 5s", what)
	}
	return ""
}

func writeFile(t *testing.T, name, text string) {
	t.Helper()
	if err := os.WriteFile(name, []byte(text), 0); err != nil {
		t.Fatalf("write %s: %v", name, err)
	}
}

func appendFile(t *testing.T, name, text string) {
	t.Helper()
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_APPEND, 0)
	if err == nil {
		_, err = f.WriteString(text)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		t.Fatalf("append to %s: %v", name, err)
	}
}

// TestTracePipeStreams: over a recording backend, `cat trace_pipe` on the
// mount waits while events are enabled, prints each entry as it is
// recorded (the reader is still running), and ends when the last event is
// disabled; what it read is consumed from trace. Writes to the mount go on
// while the read waits.
func TestTracePipeStreams(t *testing.T) {
	requireFUSE(t)
	for name, argv := range pipeReaders(t) {
		t.Run(name, func(t *testing.T) {
			w, mnt, _ := mountEnabled(t)
			cmd, lines, exited := startPipeReader(t, mnt, argv)
			if !waitingIn(cmd.Process.Pid) {
				t.Fatal("the reader did not wait on an empty trace_pipe")
			}
			// The mount serves other requests while the read waits.
			appendFile(t, filepath.Join(mnt, "kprobe_events"), "p:other vfs_write\n")
			for i, text := range []string{"first entry", "second entry"} {
				w.fs.Record(uint64(i+1), []byte(text))
				if got := nextLine(t, lines, text); got != text {
					t.Fatalf("read %q, want %q", got, text)
				}
			}
			select {
			case err := <-exited:
				t.Fatalf("the reader ended while events were enabled: %v", err)
			default:
			}
			writeFile(t, filepath.Join(mnt, "events/kprobes/myev/enable"), "0\n")
			select {
			case err := <-exited:
				if err != nil {
					t.Fatalf("reader: %v", err)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("the reader did not end when the event was disabled")
			}
			trace, err := os.ReadFile(filepath.Join(mnt, "trace"))
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(trace), "entry") {
				t.Errorf("trace still holds what trace_pipe consumed:\n%s", trace)
			}
		})
	}
}

// TestTracePipeSignals: a reader waiting in trace_pipe on the mount dies of
// SIGINT, SIGTERM and SIGKILL at once (the mount answers the kernel's
// interrupt request), and the mount goes on serving.
func TestTracePipeSignals(t *testing.T) {
	requireFUSE(t)
	cat, err := exec.LookPath("cat")
	if err != nil {
		t.Skip("no cat")
	}
	w, mnt, _ := mountEnabled(t)
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGKILL} {
		cmd, _, exited := startPipeReader(t, mnt, []string{cat})
		if !waitingIn(cmd.Process.Pid) {
			t.Fatalf("%v: the reader did not wait", sig)
		}
		cmd.Process.Signal(sig)
		select {
		case err := <-exited:
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != sig {
				t.Errorf("%v: reader ended with %v, want death by the signal", sig, err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%v: the reader did not die in 5s", sig)
		}
	}
	// Nothing was consumed by the interrupted reads.
	w.fs.Record(1, []byte("after the signals"))
	f, err := os.Open(filepath.Join(mnt, "trace_pipe"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 4096)
	n, err := f.Read(buf)
	if err != nil || string(buf[:n]) != "after the signals\n" {
		t.Errorf("read %q, %v", buf[:n], err)
	}
	writeFile(t, filepath.Join(mnt, "events/kprobes/myev/enable"), "0\n")
}

// TestTracePipeNonblock: an O_NONBLOCK read of an empty trace_pipe fails
// with EAGAIN instead of waiting, as on the kernel's tracefs.
func TestTracePipeNonblock(t *testing.T) {
	requireFUSE(t)
	w, mnt, _ := mountEnabled(t)
	defer writeFile(t, filepath.Join(mnt, "events/kprobes/myev/enable"), "0\n")
	fd, err := syscall.Open(filepath.Join(mnt, "trace_pipe"), syscall.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	buf := make([]byte, 4096)
	if n, err := syscall.Read(fd, buf); err != syscall.EAGAIN {
		t.Errorf("read = %d, %v; want EAGAIN", n, err)
	}
	w.fs.Record(1, []byte("ready"))
	if n, err := syscall.Read(fd, buf); err != nil || string(buf[:n]) != "ready\n" {
		t.Errorf("read = %q, %v", buf[:n], err)
	}
}

// TestTracePipeUnmount: unmounting while a reader waits in trace_pipe ends
// that read (end of file) and the unmount completes.
func TestTracePipeUnmount(t *testing.T) {
	requireFUSE(t)
	cat, err := exec.LookPath("cat")
	if err != nil {
		t.Skip("no cat")
	}
	w, mnt, unmount := mountEnabled(t)
	cmd, _, exited := startPipeReader(t, mnt, []string{cat})
	if !waitingIn(cmd.Process.Pid) {
		t.Fatal("the reader did not wait")
	}
	w.fs.Shutdown()
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("reader: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the reader did not end at shutdown")
	}
	unmount()
	if mounted(t, mnt) {
		t.Errorf("%s still mounted", mnt)
	}
}
