package fusefs_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ktrace-dev/ktrace/fusefs"
	"github.com/ktrace-dev/ktrace/tracefs"
)

// fsWrite is one write(2) of text to a tracefs file, through the tracefs
// API: the poll tests leave the mount to poll(2) and raw system calls
// (see mountServing).
func fsWrite(t *testing.T, fsys *tracefs.FS, name, text string) {
	t.Helper()
	h, err := fsys.Open(name, os.O_WRONLY|os.O_APPEND)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if _, err := h.Write([]byte(text)); err != nil {
		t.Fatalf("write %q to %s: %v", text, name, err)
	}
}

// mountServing mounts w as a server that only serves others: poll(2) on
// the mount is answered, not refused. The test must then reach the mount
// with raw system calls only: an os.Open would register the file with the
// Go runtime's poller, whose poll request this same process answers.
func mountServing(t *testing.T, w *world) string {
	t.Helper()
	requireFUSE(t)
	dir := t.TempDir()
	srv, err := fusefs.Mount(dir, w.fs, fusefs.Options{})
	if err != nil {
		t.Fatalf("mount: %v", err)
	}
	t.Cleanup(func() {
		if err := srv.Unmount(); err != nil {
			t.Errorf("unmount: %v", err)
		}
	})
	return dir
}

// pollFile opens name read-only and polls it for events for at most
// timeout; it returns the events reported (0 on time out).
func pollFile(t *testing.T, name string, events int16, timeout time.Duration) int16 {
	t.Helper()
	fd, err := syscall.Open(name, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	return pollFD(t, fd, events, timeout)
}

func pollFD(t *testing.T, fd int, events int16, timeout time.Duration) int16 {
	t.Helper()
	pfd := []unix.PollFd{{Fd: int32(fd), Events: events}}
	for {
		_, err := unix.Poll(pfd, int(timeout/time.Millisecond))
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			t.Fatalf("poll: %v", err)
		}
		return pfd[0].Revents
	}
}

// TestPollFiles: poll(2) through the mount answers as the kernel's
// tracefs does (measured in the 6.1 and 6.12 guests): a file with no poll
// method of its own is always ready; trace_pipe is readable when it holds
// an entry, and a poller waiting on an empty one is woken by the next
// entry; a 6.12 hist file whose event counted no hit is not ready, a 6.1
// one always is.
func TestPollFiles(t *testing.T) {
	w := newRecordingWorld(t, "6.12")
	fsWrite(t, w.fs, "kprobe_events", "p:myev vfs_read\n")
	fsWrite(t, w.fs, "events/kprobes/myev/enable", "1\n")
	fsWrite(t, w.fs, "events/kprobes/myev/trigger", "hist:keys=common_pid\n")
	mnt := mountServing(t, w)
	defer fsWrite(t, w.fs, "events/kprobes/myev/enable", "0\n")

	for _, name := range []string{"kprobe_events", "trace", "trace_marker", "events/kprobes/myev/format"} {
		if got := pollFile(t, filepath.Join(mnt, name), unix.POLLIN|unix.POLLPRI, time.Second); got != unix.POLLIN {
			t.Errorf("%s: revents %#x, want POLLIN (always ready)", name, got)
		}
	}
	pipe := filepath.Join(mnt, "trace_pipe")
	if got := pollFile(t, pipe, unix.POLLIN, 300*time.Millisecond); got != 0 {
		t.Errorf("empty trace_pipe: revents %#x, want a time out", got)
	}
	w.fs.Record(1, []byte("first"))
	if got := pollFile(t, pipe, unix.POLLIN|unix.POLLPRI, time.Second); got != unix.POLLIN {
		t.Errorf("trace_pipe with an entry: revents %#x, want POLLIN", got)
	}

	// A non-blocking reader, as the Go runtime reads: EAGAIN, then a
	// poll that the next entry ends.
	fd, err := syscall.Open(pipe, syscall.O_RDONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	buf := make([]byte, 4096)
	if n, err := syscall.Read(fd, buf); err != nil || string(buf[:n]) != "first\n" {
		t.Fatalf("read = %q, %v", buf[:n], err)
	}
	if _, err := syscall.Read(fd, buf); err != syscall.EAGAIN {
		t.Fatalf("read of the empty trace_pipe: %v, want EAGAIN", err)
	}
	go func() {
		time.Sleep(200 * time.Millisecond)
		w.fs.Record(1, []byte("second"))
	}()
	start := time.Now()
	if got := pollFD(t, fd, unix.POLLIN, 5*time.Second); got != unix.POLLIN {
		t.Fatalf("waiting on trace_pipe: revents %#x after %v, want POLLIN", got, time.Since(start))
	}
	if n, err := syscall.Read(fd, buf); err != nil || string(buf[:n]) != "second\n" {
		t.Errorf("read after the wake-up = %q, %v", buf[:n], err)
	}

	hist := filepath.Join(mnt, "events/kprobes/myev/hist")
	if got := pollFile(t, hist, unix.POLLIN|unix.POLLPRI, 300*time.Millisecond); got != 0 {
		t.Errorf("6.12 hist with no hit: revents %#x, want a time out", got)
	}

	w61 := newRecordingWorld(t, "6.1")
	fsWrite(t, w61.fs, "kprobe_events", "p:myev vfs_read\n")
	fsWrite(t, w61.fs, "events/kprobes/myev/trigger", "hist:keys=common_pid\n")
	mnt61 := mountServing(t, w61)
	if got := pollFile(t, filepath.Join(mnt61, "events/kprobes/myev/hist"), unix.POLLIN|unix.POLLPRI, time.Second); got != unix.POLLIN {
		t.Errorf("6.1 hist: revents %#x, want POLLIN (no poll method there)", got)
	}
}

// TestPollSelfAccess: a server that reads its own mount refuses poll
// requests (the kernel then finds every file always ready), so that the
// Go runtime's poller never waits on this process.
func TestPollSelfAccess(t *testing.T) {
	w := newRecordingWorld(t, "6.12")
	mnt, _ := mountWorld(t, w, fusefs.Options{})
	if got := pollFile(t, filepath.Join(mnt, "trace_pipe"), unix.POLLIN, time.Second); got != unix.POLLIN {
		t.Errorf("trace_pipe: revents %#x, want POLLIN", got)
	}
}

// TestGoReader: a Go program reads trace_pipe on the mount with os.Open
// and Read, as it would on tracefs, and gets the next entry. The Go
// runtime registers the file with epoll (a poll request to the mount)
// and makes it non-blocking with fcntl, which FUSE does not pass on: the
// read waits in the mount, where on tracefs it fails with EAGAIN and the
// runtime waits in epoll.
func TestGoReader(t *testing.T) {
	if mnt := os.Getenv("KTRACE_GO_READER"); mnt != "" {
		f, err := os.Open(filepath.Join(mnt, "trace_pipe"))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		buf := make([]byte, 4096)
		n, err := f.Read(buf)
		if err != nil {
			t.Fatal(err)
		}
		os.Stdout.Write(buf[:n])
		return
	}
	w := newRecordingWorld(t, "6.12")
	fsWrite(t, w.fs, "kprobe_events", "p:myev vfs_read\n")
	fsWrite(t, w.fs, "events/kprobes/myev/enable", "1\n")
	mnt := mountServing(t, w)
	defer fsWrite(t, w.fs, "events/kprobes/myev/enable", "0\n")
	cmd := exec.Command(os.Args[0], "-test.run=^TestGoReader$", "-test.v")
	cmd.Env = append(os.Environ(), "KTRACE_GO_READER="+mnt)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	time.Sleep(500 * time.Millisecond)
	w.fs.Record(1, []byte("from the backend"))
	select {
	case err := <-done:
		if err != nil || !strings.Contains(out.String(), "from the backend\n") {
			t.Errorf("reader: %v\n%s", err, out.String())
		}
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		<-done
		t.Fatalf("the Go reader did not see the entry:\n%s", out.String())
	}
}
