package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"

	"github.com/ktrace-dev/ktrace/export"
	"github.com/ktrace-dev/ktrace/fusefs"
	"github.com/ktrace-dev/ktrace/record"
	"github.com/ktrace-dev/ktrace/tracefs"
	"github.com/ktrace-dev/ktrace/tracefs/live"
	"github.com/spf13/cobra"
)

func newMountCmd(g *globals) *cobra.Command {
	var allowOther, debug, daemon bool
	var uidFlag, gidFlag, modeFlag, exportFlag, metricsAddr string
	cmd := &cobra.Command{
		Use:   "mount DIR",
		Short: "Mount the emulated tracefs on DIR with FUSE",
		Args:  usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := args[0]
			acc, err := parseMountAccess(cmd, uidFlag, gidFlag, modeFlag)
			if err != nil {
				return err
			}
			daemonCopy := fusefs.IsDaemon()
			if daemon && !daemonCopy {
				return startDaemon(cmd, dir)
			}
			e, err := g.loadEnv("kernel")
			if err != nil {
				return err
			}
			stderr := cmd.ErrOrStderr()
			cleared, err := fusefs.PrepareMountPoint(dir)
			if err != nil {
				return failf(exitRejected, "mount: %w", err)
			}
			if cleared > 0 {
				fmt.Fprintf(stderr, "ktrace: cleared a dead mount on %s\n", dir)
			}
			sinks, err := export.OpenSinks(cmd.Context(), exportFlag, metricsAddr)
			if err != nil {
				return failf(exitUsage, "mount: %w", err)
			}
			defer sinks.Close()
			w := e.openWorldExport(acc, sinks.Events())
			defer w.Close()
			if (exportFlag != "" || metricsAddr != "") && !w.Live {
				return failf(exitUsage, "mount: --export and --metrics-addr need the live backend (probes on the running kernel)")
			}
			sinks.SetCounts(func() (record.Counts, error) {
				var c record.Counts
				for _, ev := range w.EventCounts() {
					c.Events = append(c.Events, record.EventCount{Name: ev.Group + "/" + ev.Name, Hits: ev.Hits, Misses: ev.Misses})
				}
				return c, nil
			})
			save, err := g.useSession(w)
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
			srv, err := fusefs.Mount(dir, w.FS, fusefs.Options{AllowOther: allowOther, Debug: debug})
			if err != nil {
				code := exitRejected
				if errors.Is(err, syscall.EPERM) || errors.Is(err, os.ErrPermission) {
					code = exitNoAccess
				}
				return failf(code, "mount: %w", err)
			}
			fmt.Fprintln(stderr, w.Note)
			for _, l := range w.AccessNotes(acc, allowOther) {
				fmt.Fprintln(stderr, l)
			}
			fmt.Fprintf(stderr, "ktrace: tracefs (%s) mounted on %s; SIGINT or SIGTERM unmounts\n", e.dialect.Name, dir)
			if daemonCopy {
				// fusefs.Mount returned once the kernel's INIT was
				// answered: the mount answers; tell the waiting parent.
				fusefs.ReportReady()
			}
			var saveErr error
			err = srv.ServeUntil(sigs, func() {
				saved, saveErr = true, save()
				w.DetachAll()
			})
			if saveErr != nil {
				fmt.Fprintf(stderr, "ktrace: %v\n", saveErr)
			}
			// What is queued for export gets its time to go out.
			sinks.Flush()(stderr)
			if err != nil {
				return failf(exitRejected, "mount: %w", err)
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
	cmd.Flags().StringVar(&exportFlag, "export", "", "also send every event recorded into trace as an OTLP log record, and the hit counts as metrics (otlp; configured by the OTEL_* variables; live backend only)")
	cmd.Flags().StringVar(&metricsAddr, "metrics-addr", "", "serve per-event hits and misses for Prometheus on HOST:PORT (live backend only)")
	return cmd
}

// parseMountAccess reads --uid, --gid and --mode. The invoking user stands
// in for root.
func parseMountAccess(cmd *cobra.Command, uid, gid, mode string) (*live.Access, error) {
	acc := &live.Access{Root: tracefs.Owner{UID: uint32(os.Geteuid()), GID: uint32(os.Getegid())}}
	given := func(name, v string) *string {
		if cmd.Flags().Changed(name) {
			return &v
		}
		return nil
	}
	opts, err := tracefs.ParseMountOptions(given("uid", uid), given("gid", gid), given("mode", mode))
	if err != nil {
		return nil, failf(exitUsage, "mount: --%w", err)
	}
	acc.Opts = opts
	return acc, nil
}

// startDaemon runs this `ktrace mount` again in the background
// (fusefs.StartDaemon) and prints the server's pid once its mount answers.
func startDaemon(cmd *cobra.Command, dir string) error {
	pid, err := fusefs.StartDaemon(os.Args[1:], dir, cmd.ErrOrStderr())
	if err != nil {
		var ee *exec.ExitError
		if errors.Is(err, fusefs.ErrServerExited) && errors.As(err, &ee) && ee.ExitCode() > 0 {
			return &exitError{code: ee.ExitCode(), quiet: true}
		}
		return failf(exitRejected, "mount: --daemon: %w", err)
	}
	fmt.Fprintf(cmd.OutOrStdout(), "%d\n", pid)
	return nil
}
