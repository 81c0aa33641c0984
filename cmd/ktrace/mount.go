package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/ktrace-dev/ktrace/events"
	"github.com/ktrace-dev/ktrace/fusefs"
	"github.com/spf13/cobra"
)

func newMountCmd(g *globals) *cobra.Command {
	var allowOther, debug, daemon bool
	cmd := &cobra.Command{
		Use:   "mount DIR",
		Short: "Mount the emulated tracefs on DIR with FUSE",
		Long: `mount serves the tree 'ktrace sh' shows (kprobe_events, dynamic_events,
error_log, events/, kprobe_profile, README, trace, trace_pipe, ...) as a real
filesystem on DIR, so any program can use it as it would /sys/kernel/tracing:
'echo LINE >> DIR/kprobe_events' is checked exactly as the kernel would, a
rejected line fails that write(2) (EINVAL, ...) and adds its error_log entry,
'>' (O_TRUNC) clears the file's events (EBUSY while one is enabled), '-:EV'
removes one.

ktrace mount runs in the foreground until SIGINT or SIGTERM, then disables
and removes every event and unmounts DIR. With --daemon it starts itself in
the background, waits until DIR is mounted, prints the server's pid and
exits; 'kill PID' unmounts. A mount left behind by a killed
ktrace (every access fails with "Transport endpoint is not connected") is
cleared by the next 'ktrace mount DIR'.

Only the invoking user can use the mount and every file is owner-only;
--allow-other lets every user in (FUSE allow_other: root, or
user_allow_other in /etc/fuse.conf) with the owner's permission bits.

As root on the running kernel with kprobes and BPF, enabling an event
attaches it with eBPF and its hits fill trace and trace_pipe and count in
kprobe_profile (the server's own activity is not traced); 'cat
DIR/trace_pipe' waits for hits and prints them as they come, until the last
event is disabled or the mount ends (a signal to the reader ends its wait
as on the kernel's tracefs). Elsewhere there
is no probe backend: events are emulated, hits stay 0, trace shows its
header only and reads of trace_pipe end at once.`,
		Example: `  mkdir -p /tmp/tracing && ktrace mount /tmp/tracing &
  echo 'p:myev do_sys_openat2 $arg1' >> /tmp/tracing/kprobe_events
  cat /tmp/tracing/events/kprobes/myev/format`,
		Args: usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := args[0]
			if daemon && os.Getenv(daemonEnv) != "1" {
				return startDaemon(cmd, dir)
			}
			e, err := g.loadEnv("kernel")
			if err != nil {
				return err
			}
			stderr := cmd.ErrOrStderr()
			if stale, err := fusefs.ClearStale(dir); err != nil {
				return failf(exitRejected, "mount: %w", err)
			} else if stale {
				fmt.Fprintf(stderr, "ktrace: cleared a dead mount on %s\n", dir)
			}
			w, note, closeWorld := e.newTraceWorld(true)
			defer closeWorld()
			// Catch the signals before mounting so none is lost in between.
			sigs := make(chan os.Signal, 1)
			signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
			defer signal.Stop(sigs)
			srv, err := fusefs.Mount(dir, w.fs, fusefs.Options{AllowOther: allowOther, Debug: debug})
			if err != nil {
				code := exitRejected
				if errors.Is(err, syscall.EPERM) || errors.Is(err, os.ErrPermission) {
					code = exitNoAccess
				}
				return failf(code, "mount: %w", err)
			}
			fmt.Fprintln(stderr, note)
			fmt.Fprintf(stderr, "ktrace: tracefs (%s) mounted on %s; SIGINT or SIGTERM unmounts\n", e.dialect.Name, dir)
			done := make(chan struct{})
			go func() { srv.Wait(); close(done) }()
			select {
			case <-sigs:
			case <-done:
				// Unmounted from outside (umount, fusermount -u).
			}
			// End the trace_pipe reads waiting in the mount first: a
			// reader blocked in it would keep it busy.
			w.fs.Shutdown()
			srv.Locked(func() { detachAll(w) })
			if err := srv.Unmount(); err != nil {
				return failf(exitRejected, "mount: %w", err)
			}
			// After a lazy unmount (DIR was busy) the kernel keeps the
			// connection until its last user goes; do not wait for that:
			// exiting closes it, and the users get ENOTCONN.
			select {
			case <-done:
			case <-time.After(2 * time.Second):
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&allowOther, "allow-other", false, "let every user use the mount, with the owner's permissions")
	cmd.Flags().BoolVar(&debug, "debug", false, "log every FUSE request on stderr")
	cmd.Flags().BoolVar(&daemon, "daemon", false, "run in the background; print the pid once DIR is mounted")
	return cmd
}

// detachAll disables (through the backend, which detaches attached
// probes) and removes every event, so that nothing the mount created
// outlives it.
func detachAll(w *world) {
	b := w.fs.Backend()
	for _, ev := range b.Events() {
		if ev.Enabled {
			b.SetEnabled(ev.Group, ev.Name, false)
		}
	}
	// dynamic_events' scope is every dynamic event.
	w.reg.Truncate(events.DynamicEvents)
}

// daemonEnv marks the background copy of `ktrace mount --daemon`.
const daemonEnv = "KTRACE_MOUNT_DAEMON"

// startDaemon runs this `ktrace mount` again in a new session, with its
// output in a temporary log, and returns once dir is mounted (printing the
// server's pid) or the server has failed (printing its log and exiting with
// its status).
func startDaemon(cmd *cobra.Command, dir string) error {
	exe, err := os.Executable()
	if err != nil {
		return failf(exitRejected, "mount: --daemon: %w", err)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return failf(exitRejected, "mount: --daemon: %w", err)
	}
	var args []string
	for _, a := range os.Args[1:] {
		if a != "--daemon" && a != "--daemon=true" {
			args = append(args, a)
		}
	}
	log, err := os.CreateTemp("", "ktrace-mount-*.log")
	if err != nil {
		return failf(exitRejected, "mount: --daemon: %w", err)
	}
	defer os.Remove(log.Name())
	defer log.Close()
	child := exec.Command(exe, args...)
	child.Env = append(os.Environ(), daemonEnv+"=1")
	child.Stdout, child.Stderr = log, log
	child.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := child.Start(); err != nil {
		return failf(exitRejected, "mount: --daemon: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- child.Wait() }()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case err := <-exited:
			out, _ := os.ReadFile(log.Name())
			cmd.ErrOrStderr().Write(out)
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				return &exitError{code: ee.ExitCode(), quiet: true}
			}
			return failf(exitRejected, "mount: --daemon: the server exited before mounting %s", dir)
		case <-timeout:
			child.Process.Signal(syscall.SIGTERM)
			return failf(exitRejected, "mount: --daemon: %s not mounted after 30s", dir)
		case <-tick.C:
			if isMountPoint(abs) {
				fmt.Fprintf(cmd.OutOrStdout(), "%d\n", child.Process.Pid)
				return nil
			}
		}
	}
}

// isMountPoint reports whether dir is a mount point of a ktrace FUSE mount
// in this mount namespace.
func isMountPoint(dir string) bool {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return false
	}
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		// mount point is field 5; the fs type follows the "-" separator.
		for i, x := range f {
			if x == "-" && len(f) > 4 && f[4] == dir && i+1 < len(f) && f[i+1] == "fuse.ktrace" {
				return true
			}
		}
	}
	return false
}
