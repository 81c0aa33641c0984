package main

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"os/user"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ktrace-dev/ktrace/events"
	"github.com/ktrace-dev/ktrace/fusefs"
	"github.com/ktrace-dev/ktrace/tracefs"
	"github.com/spf13/cobra"
)

func newMountCmd(g *globals) *cobra.Command {
	var allowOther, debug, daemon bool
	var uidFlag, gidFlag, modeFlag string
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
the background, waits until the server's own mount of DIR answers, prints
the server's pid and exits; 'kill PID' unmounts. A mount left behind by a
killed ktrace (every access fails with
"Transport endpoint is not connected") is cleared by the next
'ktrace mount DIR'; a live ktrace mount on DIR is left alone and the new
mount refused. DIR must be an existing directory.

Files and directories have the kernel's tracefs modes (the root directory
drwx------, kprobe_events and the other control files -rw-r-----, README
and format files -r--r-----, ...), with the invoking user where tracefs
shows root, and the kernel checks them on every access. --uid, --gid and
--mode are tracefs's mount options uid=, gid= and mode=: --uid owns the
root directory (and, on a 6.12 model, every file), --gid is every file's
group, --mode the root directory's permission bits (octal; default 0700).
Only the invoking user can reach the mount unless --allow-other (FUSE
allow_other: root, or user_allow_other in /etc/fuse.conf) lets others in,
and then they get only what those modes grant: nothing without --gid and
--mode; with --gid G --mode 0750 the group reads README, kprobe_events,
trace and trace_pipe but cannot define probes, enable events or set
filters. On a live mount (below) that is access to the running kernel's
probes: widen it only for users you would give root's tracefs.

As root on the running kernel with kprobes and BPF, enabling an event
attaches it with eBPF and its hits fill trace and trace_pipe and count in
kprobe_profile (the server's own activity is not traced); 'cat
DIR/trace_pipe' waits for hits and prints them as they come, until the last
event is disabled or the mount ends (a signal to the reader ends its wait
as on the kernel's tracefs). Elsewhere there
is no probe backend: events are emulated, hits stay 0, trace shows its
header only and reads of trace_pipe end at once.

With --session FILE the mount starts with the session's events (its
enabled ones enabled) and saves the events it holds back to FILE when it
ends; the session stays locked meanwhile, so add, rm, enable and disable
wait for it.`,
		Example: `  mkdir -p /tmp/tracing && ktrace mount /tmp/tracing &
  echo 'p:myev do_sys_openat2 $arg1' >> /tmp/tracing/kprobe_events
  cat /tmp/tracing/events/kprobes/myev/format
  sudo ktrace mount --daemon --allow-other --gid tracing --mode 0750 /tmp/tracing`,
		Args: usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := args[0]
			acc, err := parseMountAccess(cmd, uidFlag, gidFlag, modeFlag)
			if err != nil {
				return err
			}
			if daemon && os.Getenv(daemonEnv) != "1" {
				return startDaemon(cmd, dir)
			}
			if os.Getenv(daemonEnv) == "1" {
				// Programs the server runs (fusermount) must not hold
				// the parent's pipe open.
				syscall.CloseOnExec(daemonReadyFD)
			}
			e, err := g.loadEnv("kernel")
			if err != nil {
				return err
			}
			stderr := cmd.ErrOrStderr()
			cleared, err := fusefs.PrepareMountPoint(dir)
			switch {
			case errors.Is(err, os.ErrNotExist):
				return failf(exitRejected, "mount: %s does not exist; create the directory first (mkdir -p %s)", dir, dir)
			case errors.Is(err, syscall.ENOTDIR):
				return failf(exitRejected, "mount: %s is not a directory", dir)
			case err != nil:
				return failf(exitRejected, "mount: %w", err)
			}
			if cleared > 0 {
				fmt.Fprintf(stderr, "ktrace: cleared a dead mount on %s\n", dir)
			}
			w, note, live, closeWorld := e.newTraceWorld(acc)
			defer closeWorld()
			save, err := g.useSession(e, w)
			if err != nil {
				return err
			}
			saved := false
			defer func() {
				if !saved {
					save()
				}
			}()
			// Catch the signals before mounting so none is lost in between.
			sigs := make(chan os.Signal, 1)
			signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
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
			if acc.grantsOthers() {
				switch {
				case !allowOther:
					fmt.Fprintln(stderr, "ktrace: note: without --allow-other only the invoking user can reach the mount; --uid and --mode grant others nothing")
				case live:
					for _, l := range liveAccessWarnings(w, acc) {
						fmt.Fprintln(stderr, "ktrace: warning: this mount attaches probes to the running kernel: "+l)
					}
				}
			}
			fmt.Fprintf(stderr, "ktrace: tracefs (%s) mounted on %s; SIGINT or SIGTERM unmounts\n", e.dialect.Name, dir)
			if os.Getenv(daemonEnv) == "1" {
				// fusefs.Mount returned once the kernel answered a
				// lookup in this mount: tell the waiting parent.
				reportReady()
			}
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
			var saveErr error
			srv.Locked(func() {
				saved, saveErr = true, save()
				detachAll(w)
			})
			if saveErr != nil {
				fmt.Fprintf(stderr, "ktrace: %v\n", saveErr)
			}
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
	cmd.Flags().BoolVar(&allowOther, "allow-other", false, "let other users reach the mount (they get what the tracefs modes grant them)")
	cmd.Flags().StringVar(&uidFlag, "uid", "", "owner of the root directory (of every file on 6.12), as tracefs's uid=: a uid or user name")
	cmd.Flags().StringVar(&gidFlag, "gid", "", "group of every file, as tracefs's gid=: a gid or group name")
	cmd.Flags().StringVar(&modeFlag, "mode", "", "permission bits of the root directory, as tracefs's mode= (octal, default 0700)")
	cmd.Flags().BoolVar(&debug, "debug", false, "log every FUSE request on stderr")
	cmd.Flags().BoolVar(&daemon, "daemon", false, "run in the background; print the pid once DIR is mounted")
	return cmd
}

// parseMountAccess reads --uid, --gid and --mode. The invoking user stands
// in for root.
func parseMountAccess(cmd *cobra.Command, uid, gid, mode string) (*mountAccess, error) {
	acc := &mountAccess{root: tracefs.Owner{UID: uint32(os.Geteuid()), GID: uint32(os.Getegid())}}
	fl := cmd.Flags()
	if fl.Changed("uid") {
		v, err := lookupID(uid, func(name string) (string, error) {
			u, err := user.Lookup(name)
			if err != nil {
				return "", err
			}
			return u.Uid, nil
		})
		if err != nil {
			return nil, failf(exitUsage, "mount: --uid %s: %w", uid, err)
		}
		acc.opts.UID = &v
	}
	if fl.Changed("gid") {
		v, err := lookupID(gid, func(name string) (string, error) {
			g, err := user.LookupGroup(name)
			if err != nil {
				return "", err
			}
			return g.Gid, nil
		})
		if err != nil {
			return nil, failf(exitUsage, "mount: --gid %s: %w", gid, err)
		}
		acc.opts.GID = &v
	}
	if fl.Changed("mode") {
		v, err := strconv.ParseUint(mode, 8, 32)
		if err != nil || v > 0o7777 {
			return nil, failf(exitUsage, "mount: --mode %s: not an octal mode of at most 07777", mode)
		}
		m := uint32(v)
		acc.opts.Mode = &m
	}
	return acc, nil
}

// lookupID parses a numeric id or looks a name up. (uid_t)-1 is no id.
func lookupID(s string, lookup func(string) (string, error)) (uint32, error) {
	if s == "" {
		return 0, errors.New("empty")
	}
	if s[0] < '0' || s[0] > '9' {
		id, err := lookup(s)
		if err != nil {
			return 0, err
		}
		s = id
	}
	v, err := strconv.ParseUint(s, 10, 32)
	if err != nil || v == 1<<32-1 {
		return 0, fmt.Errorf("not an id or a known name")
	}
	return uint32(v), nil
}

// grantsOthers reports whether the options give a user other than the
// invoking one access: another owner, or group or other bits on the root
// directory.
func (a *mountAccess) grantsOthers() bool {
	return (a.opts.UID != nil && *a.opts.UID != a.root.UID) || (a.opts.Mode != nil && *a.opts.Mode&0o077 != 0)
}

// liveAccessWarnings says who besides the invoking user can define and
// enable probes on the mount (the owner of kprobe_events, if another user)
// and who can read what they record (the group, when the root directory
// lets it in).
func liveAccessWarnings(w *world, acc *mountAccess) []string {
	var out []string
	if fi, err := w.fs.Stat("kprobe_events"); err == nil {
		if o, ok := fi.Sys().(tracefs.Owner); ok && o.UID != acc.root.UID {
			out = append(out, fmt.Sprintf("uid %d can define and enable them", o.UID))
		}
	}
	root, err := w.fs.Stat(".")
	if err != nil {
		return out
	}
	if o, ok := root.Sys().(tracefs.Owner); ok && root.Mode().Perm()&0o050 == 0o050 {
		out = append(out, fmt.Sprintf("group %d can read what they record (trace, trace_pipe) and the definitions", o.GID))
	}
	return out
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

// daemonReadyFD is the descriptor on which the background copy reports
// that its mount answers: the write end of a pipe from startDaemon.
const daemonReadyFD = 3

// daemonReady is the line the background copy writes on daemonReadyFD.
const daemonReady = "ready"

// reportReady tells startDaemon that the mount is up.
func reportReady() {
	f := os.NewFile(daemonReadyFD, "ready")
	if f == nil {
		return
	}
	fmt.Fprintln(f, daemonReady)
	f.Close()
}

// startDaemon runs this `ktrace mount` again in a new session, with its
// output in a temporary log, and returns once that server reports its own
// mount of dir answering (printing the log so far on stderr and the
// server's pid on stdout), or once the server has failed (printing its log
// and exiting with its status). A mount already on dir, dead or alive,
// does not count: the server clears a dead one and refuses to stack on a
// live one.
func startDaemon(cmd *cobra.Command, dir string) error {
	exe, err := os.Executable()
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
	readyR, readyW, err := os.Pipe()
	if err != nil {
		return failf(exitRejected, "mount: --daemon: %w", err)
	}
	defer readyR.Close()
	child := exec.Command(exe, args...)
	child.Env = append(os.Environ(), daemonEnv+"=1")
	child.Stdout, child.Stderr = log, log
	child.ExtraFiles = []*os.File{readyW} // daemonReadyFD
	child.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	err = child.Start()
	readyW.Close()
	if err != nil {
		return failf(exitRejected, "mount: --daemon: %w", err)
	}
	// The pipe ends with "ready" when the mount answers, or with nothing
	// when the server exits (or closes it) first.
	ready := make(chan bool, 1)
	go func() {
		line, _ := bufio.NewReader(readyR).ReadString('\n')
		ready <- strings.TrimSpace(line) == daemonReady
	}()
	exited := make(chan error, 1)
	go func() { exited <- child.Wait() }()
	failed := func(err error) error {
		out, _ := os.ReadFile(log.Name())
		cmd.ErrOrStderr().Write(out)
		var ee *exec.ExitError
		if errors.As(err, &ee) && ee.ExitCode() > 0 {
			return &exitError{code: ee.ExitCode(), quiet: true}
		}
		return failf(exitRejected, "mount: --daemon: the server ended before mounting %s (%v)", dir, err)
	}
	timeout := time.After(30 * time.Second)
	for {
		select {
		case ok := <-ready:
			if ok {
				// What the server said while mounting (the backend,
				// warnings) goes to the caller's stderr.
				if out, err := os.ReadFile(log.Name()); err == nil {
					cmd.ErrOrStderr().Write(out)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%d\n", child.Process.Pid)
				return nil
			}
			// Not ready: the server is ending; its status says why.
			select {
			case err := <-exited:
				return failed(err)
			case <-timeout:
				child.Process.Signal(syscall.SIGTERM)
				return failf(exitRejected, "mount: --daemon: the server gave up on %s without exiting", dir)
			}
		case err := <-exited:
			// The ready line may still be in the pipe.
			if <-ready {
				return failf(exitRejected, "mount: --daemon: the server mounted %s and then exited: %v", dir, err)
			}
			return failed(err)
		case <-timeout:
			child.Process.Signal(syscall.SIGTERM)
			return failf(exitRejected, "mount: --daemon: %s not mounted after 30s", dir)
		}
	}
}
