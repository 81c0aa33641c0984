package tracer

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ktrace-dev/ktrace/internal/readypipe"
)

// The reaper removes the tracefs probes of a ktrace process that died
// without removing them itself (kill -9, a crash, the OOM killer).
//
// Most probes are file descriptors of ktrace's process and go away with
// it. A kretprobe whose maxactive differs from the kernel's default can
// only be created through tracefs (kprobe_events), and such an entry
// outlives its creator. Before ktrace creates one, it starts a reaper: a
// copy of its own executable in a session of its own (so a Ctrl-C or a
// kill of the process group spares it) that holds the read end of a pipe
// whose write end only ktrace holds. When ktrace exits, however it exits,
// the kernel closes that end; the reaper reads end of file and removes
// every event of the groups named "<TraceFSPrefix>_<pid>_…" for ktrace's
// pid from kprobe_events, uprobe_events and dynamic_events, then exits.
// It touches nothing else: groups of other live ktrace processes carry
// their own pid. CleanStale at the next start remains as a second line of
// defence.

// Environment variables that turn a ktrace process into a reaper.
const (
	reaperEnvPid     = "KTRACE_REAPER_PID"
	reaperEnvTracefs = "KTRACE_REAPER_TRACEFS"
)

// reaperBusyWait bounds how long the reaper retries a removal the kernel
// refuses with EBUSY: the dead process's perf events are released as its
// files are closed, in no set order with the pipe.
const reaperBusyWait = 10 * time.Second

// Reaper is the handle of a started reaper process. Its pipe is closed
// when this process exits; Stop ends the reaper early, once this process
// removed its tracefs probes itself.
type Reaper struct {
	w   *os.File
	cmd *exec.Cmd
}

// StartReaper starts the reaper for this process's tracefs groups on the
// tracefs mounted at dir and returns once it is ready to watch. exe is the
// executable to run (the running ktrace binary): its main must call
// RunReaperIfAsked first thing.
func StartReaper(exe, dir string) (*Reaper, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("tracer: reaper pipe: %w", err)
	}
	ready, readyW, err := os.Pipe()
	if err != nil {
		r.Close()
		w.Close()
		return nil, fmt.Errorf("tracer: reaper pipe: %w", err)
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(),
		reaperEnvPid+"="+strconv.Itoa(os.Getpid()),
		reaperEnvTracefs+"="+dir,
	)
	// fd 3: end of file when this process is gone; fd 4: "ready".
	cmd.ExtraFiles = []*os.File{r, readyW}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = nil, nil, nil
	err = cmd.Start()
	r.Close()
	readyW.Close()
	if err != nil {
		w.Close()
		ready.Close()
		return nil, fmt.Errorf("tracer: starting the reaper %s: %w", exe, err)
	}
	// The reaper is not this process's child to wait for: it must outlive
	// it. Release it so that it is never left a zombie of ours either.
	go cmd.Wait()
	err = readypipe.Wait(ready)
	ready.Close()
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("tracer: the reaper did not start (%v)", err)
	}
	return &Reaper{w: w, cmd: cmd}, nil
}

// Stop tells the reaper to do its removal now and exit (closing the pipe
// is what this process's death would do).
func (r *Reaper) Stop() error {
	if r == nil || r.w == nil {
		return nil
	}
	err := r.w.Close()
	r.w = nil
	return err
}

// RunReaperIfAsked runs the reaper and exits when this process was
// started as one (StartReaper); otherwise it returns at once. Programs
// that use tracefs probes call it at the start of main.
func RunReaperIfAsked() {
	pidText := os.Getenv(reaperEnvPid)
	if pidText == "" {
		return
	}
	pid, err := strconv.Atoi(pidText)
	if err != nil || pid <= 0 {
		os.Exit(2)
	}
	os.Exit(runReaper(pid, os.Getenv(reaperEnvTracefs)))
}

// SelfReaper is the executable for StartReaper (a session's
// Config.Reaper): the running binary, whose main calls RunReaperIfAsked;
// "" (no reaper) when it cannot be found.
func SelfReaper() string {
	exe, err := os.Executable()
	if err != nil {
		return ""
	}
	return exe
}

func runReaper(pid int, dir string) int {
	// Signals meant for ktrace's terminal or process group are not ours.
	signal.Ignore(syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGPIPE)
	watch := os.NewFile(3, "ktrace-alive")
	if watch == nil || !readypipe.Report(4) {
		return 2
	}
	io.Copy(io.Discard, watch)
	watch.Close()
	if _, err := RemoveGroups(dir, pid, reaperBusyWait); err != nil {
		return 1
	}
	return 0
}

// groupOf returns the GROUP/EVENT of a dynamic event readback line
// ("r5:GROUP/EVENT SYM ...").
func groupOf(line string) (group, event string, ok bool) {
	_, rest, ok := strings.Cut(line, ":")
	if !ok {
		return "", "", false
	}
	name, _, _ := strings.Cut(rest, " ")
	return strings.Cut(name, "/")
}

// ownedBy reports whether a tracefs group was created by ktrace process
// pid ("<TraceFSPrefix>_<pid>_<random>").
func ownedBy(group string, pid int) bool {
	tail, ok := strings.CutPrefix(group, TraceFSPrefix+"_")
	if !ok {
		return false
	}
	p, _, ok := strings.Cut(tail, "_")
	return ok && p == strconv.Itoa(pid)
}

// RemoveGroups removes every event of process pid's tracefs groups from
// kprobe_events, uprobe_events and dynamic_events under dir ("" tries the
// usual places), retrying a removal refused with EBUSY for up to wait. It
// returns the events removed.
func RemoveGroups(dir string, pid int, wait time.Duration) ([]string, error) {
	return removeFromTracefs(dir, func(group string) bool { return ownedBy(group, pid) }, wait)
}

// removeFromTracefs runs removeOwned on the tracefs at dir, or ("") on the
// first of the usual places that has kprobe_events.
func removeFromTracefs(dir string, owned func(group string) bool, wait time.Duration) ([]string, error) {
	dirs := tracefsDirs
	if dir != "" {
		dirs = []string{dir}
	}
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "kprobe_events")); err != nil {
			continue
		}
		return removeOwned(d, owned, wait)
	}
	return nil, nil
}

// removeOwned removes the events whose group owned accepts from each
// dynamic event file of the tracefs at d.
func removeOwned(d string, owned func(group string) bool, wait time.Duration) ([]string, error) {
	var removed []string
	var errs []error
	deadline := time.Now().Add(wait)
	for _, file := range []string{"kprobe_events", "uprobe_events", "dynamic_events"} {
		path := filepath.Join(d, file)
		data, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(data), "\n") {
			group, event, ok := groupOf(line)
			if !ok || !owned(group) {
				continue
			}
			name := group + "/" + event
			for {
				err = writeRemoval(path, name)
				if !errors.Is(err, syscall.EBUSY) || time.Now().After(deadline) {
					break
				}
				time.Sleep(20 * time.Millisecond)
			}
			switch {
			case err == nil:
				removed = append(removed, name)
			case errors.Is(err, syscall.ENOENT):
				// Removed meanwhile (the same event listed by two files).
			default:
				errs = append(errs, fmt.Errorf("removing %s: %w", name, err))
			}
		}
	}
	return removed, errors.Join(errs...)
}

// writeRemoval writes "-:GROUP/EVENT" to a dynamic event file.
func writeRemoval(path, name string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString("-:" + name + "\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
