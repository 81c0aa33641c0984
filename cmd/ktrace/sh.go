package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/ktrace-dev/ktrace/shell"
	"github.com/spf13/cobra"
	"golang.org/x/term"
)

func newShCmd(g *globals) *cobra.Command {
	var command string
	cmd := &cobra.Command{
		Use:   "sh [SCRIPT [ARG...]] | sh -c CMD [ARG0 [ARG...]]",
		Short: "Run a shell script against the emulated tracefs",
		Long: `sh runs a POSIX shell script (the mvdan.cc/sh interpreter) whose working
directory is the emulated tracefs, mounted at /sys/kernel/tracing (and
/sys/kernel/debug/tracing). Scripts written for a real tracefs run
unchanged: 'echo LINE >> kprobe_events' is one write(2) of LINE plus a
newline, and a rejected write fails the command with status 1 and
'sh: write error: Invalid argument' (the C strerror text) on stderr, as with
busybox sh; error_log, events/, kprobe_profile, README, trace and friends
read as on the kernel model.

cat, ls, grep, head, tail and wc are built in for emulated paths; other
paths and commands reach the real system (external commands run in an empty
temporary directory and may not name tracefs paths, so they can never touch
the host's real tracefs). ktrace prints nothing of its own on stdout and one
line on stderr naming the backend. The exit status is the script's.

As root on the running kernel (--kernel host, or the default where the
host can be probed) with kprobes and BPF, enabling an event attaches it
with eBPF: its hits fill trace and trace_pipe (which waits for them while
events are enabled), kprobe_profile counts them, 'echo > trace' clears and
tracing_on 0 pauses recording. Elsewhere events are emulated only and
trace holds only what is written to trace_marker.
Without SCRIPT or -c, commands are read from stdin; on a terminal, line by
line with a "$ " prompt on stderr.

With --session FILE the tracefs starts with the session's events (its
enabled ones enabled) and the events it holds when the script ends are
saved back to FILE; the session stays locked meanwhile, so add, rm,
enable and disable wait for it.`,
		Example: `  ktrace sh -c 'echo "p:myev do_sys_openat2 \$arg1" >> kprobe_events; cat kprobe_events'
  ktrace sh -c 'echo "p:bad vfs_read %zz" >> kprobe_events || cat error_log'
  ktrace --kernel ../shared/kernels/6.1 sh probes-test.sh`,
		Args: usageArgs(cobra.ArbitraryArgs),
		RunE: func(cmd *cobra.Command, args []string) (err error) {
			// A script is parsed whole before anything is set up; a
			// terminal is read line by line.
			var script *shell.Script
			switch {
			case cmd.Flags().Changed("command"):
				name, params := "sh", []string(nil)
				if len(args) > 0 {
					name, params = args[0], args[1:]
				}
				script, err = shell.Parse(strings.NewReader(command), name, params)
			case len(args) > 0:
				f, ferr := os.Open(args[0])
				if ferr != nil {
					return failf(exitRejected, "sh: %w", ferr)
				}
				defer f.Close()
				script, err = shell.Parse(f, args[0], args[1:])
			default:
				f, ok := cmd.InOrStdin().(*os.File)
				if ok && term.IsTerminal(int(f.Fd())) {
					script = shell.Interactive(f)
				} else {
					script, err = shell.Parse(cmd.InOrStdin(), "sh", nil)
				}
			}
			if err != nil {
				return &exitError{code: exitUsage, err: fmt.Errorf("sh: %w", err)}
			}
			e, err := g.loadEnv("kernel")
			if err != nil {
				return err
			}
			stderr := cmd.ErrOrStderr()
			w := e.openWorld(nil)
			defer w.Close()
			save, err := g.useSession(w)
			if err != nil {
				return err
			}
			fmt.Fprintln(stderr, w.Note)
			status, err := script.Run(cmd.Context(), w.FS, cmd.InOrStdin(), cmd.OutOrStdout(), stderr)
			if serr := save(); serr != nil {
				return serr
			}
			if err != nil {
				return failf(exitRejected, "sh: %w", err)
			}
			if status != 0 {
				return &exitError{code: status, quiet: true}
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&command, "command", "c", "", "run `CMD` instead of a script file")
	return cmd
}
