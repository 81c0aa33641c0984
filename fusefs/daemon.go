package fusefs

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"syscall"
	"time"

	"github.com/ktrace-dev/ktrace/internal/readypipe"
)

// DaemonEnv marks the background copy of a daemonized mount server.
const DaemonEnv = "KTRACE_MOUNT_DAEMON"

// daemonReadyFD is the descriptor on which the background copy reports
// that its mount answers: the write end of a pipe from StartDaemon.
const daemonReadyFD = 3

// IsDaemon reports whether this process is the background copy started
// by StartDaemon. The copy's ready descriptor is made close-on-exec, so
// that programs the server runs (fusermount) do not hold the parent's
// pipe open.
func IsDaemon() bool {
	if os.Getenv(DaemonEnv) != "1" {
		return false
	}
	syscall.CloseOnExec(daemonReadyFD)
	return true
}

// ReportReady tells the waiting StartDaemon that the mount answers.
func ReportReady() { readypipe.Report(daemonReadyFD) }

// ErrServerExited is wrapped by StartDaemon's error when the server
// ended before mounting; the *exec.ExitError beside it carries its
// status, and the server's output has been written to stderr.
var ErrServerExited = errors.New("the server ended before mounting")

// StartDaemon runs this executable again with args (less a --daemon
// flag: the server stays in the foreground) in a new session,
// with DaemonEnv set and its output in a temporary log, and returns the
// server's pid once it reports its own mount of dir answering (having
// copied the log so far to stderr), or an error once the server has
// failed (having copied its log). A mount already on dir, dead or alive,
// does not count: the server clears a dead one and refuses to stack on a
// live one.
func StartDaemon(args []string, dir string, stderr io.Writer) (pid int, err error) {
	args = slices.DeleteFunc(slices.Clone(args), func(a string) bool { return a == "--daemon" || a == "--daemon=true" })
	exe, err := os.Executable()
	if err != nil {
		return 0, err
	}
	log, err := os.CreateTemp("", "ktrace-mount-*.log")
	if err != nil {
		return 0, err
	}
	defer os.Remove(log.Name())
	defer log.Close()
	readyR, readyW, err := os.Pipe()
	if err != nil {
		return 0, err
	}
	defer readyR.Close()
	child := exec.Command(exe, args...)
	child.Env = append(os.Environ(), DaemonEnv+"=1")
	child.Stdout, child.Stderr = log, log
	child.ExtraFiles = []*os.File{readyW} // daemonReadyFD
	child.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	err = child.Start()
	readyW.Close()
	if err != nil {
		return 0, err
	}
	// The server reports ready when the mount answers; the pipe ends
	// without it when the server exits (or closes it) first.
	ready := make(chan bool, 1)
	go func() { ready <- readypipe.Wait(readyR) == nil }()
	exited := make(chan error, 1)
	go func() { exited <- child.Wait() }()
	copyLog := func() {
		if out, err := os.ReadFile(log.Name()); err == nil {
			stderr.Write(out)
		}
	}
	failed := func(err error) error {
		copyLog()
		return fmt.Errorf("%w: %s: %w", ErrServerExited, dir, err)
	}
	timeout := time.After(30 * time.Second)
	for {
		select {
		case ok := <-ready:
			if ok {
				// What the server said while mounting (the backend,
				// warnings) goes to the caller's stderr.
				copyLog()
				return child.Process.Pid, nil
			}
			// Not ready: the server is ending; its status says why.
			select {
			case err := <-exited:
				return 0, failed(err)
			case <-timeout:
				child.Process.Signal(syscall.SIGTERM)
				return 0, fmt.Errorf("the server gave up on %s without exiting", dir)
			}
		case err := <-exited:
			// The ready line may still be in the pipe.
			if <-ready {
				return 0, fmt.Errorf("the server mounted %s and then exited: %v", dir, err)
			}
			return 0, failed(err)
		case <-timeout:
			child.Process.Signal(syscall.SIGTERM)
			return 0, fmt.Errorf("%s not mounted after 30s", dir)
		}
	}
}

// ServeUntil serves until stop delivers (a signal) or the filesystem is
// unmounted from outside (umount, fusermount -u). Then it ends the
// trace_pipe reads waiting in the mount (a blocked reader would keep it
// busy), runs teardown while no FUSE request uses the tracefs, and
// unmounts. After a lazy unmount (the mount point was busy) the kernel
// keeps the connection until its last user goes; ServeUntil waits for
// that at most two seconds: exiting closes it, and the users get ENOTCONN.
func (s *Server) ServeUntil(stop <-chan os.Signal, teardown func()) error {
	done := make(chan struct{})
	go func() { s.Wait(); close(done) }()
	select {
	case <-stop:
	case <-done:
	}
	s.t.fs.Shutdown()
	s.Locked(teardown)
	if err := s.Unmount(); err != nil {
		return err
	}
	select {
	case <-done:
	case <-time.After(2 * time.Second):
	}
	return nil
}
