package main

import (
	"bufio"
	"fmt"

	"github.com/ktrace-dev/ktrace/check"
	"github.com/ktrace-dev/ktrace/events"
	"github.com/spf13/cobra"
)

func newCheckCmd(g *globals) *cobra.Command {
	var fromFile, file string
	var sequence, errorsOnly, formats bool
	cmd := &cobra.Command{
		Use:   "check [LINE...] [-f FILE]",
		Short: "Check probe definition lines against an empty tracefs (each its own, or one in sequence)",
		Long: `check writes each LINE (or each line of FILE, '-' for stdin; blank and
comment-only lines skipped) to an empty emulated tracefs of the kernel model,
as 'echo LINE >> kprobe_events' would: lines starting with p, r or - go to
kprobe_events, others to dynamic_events (override with --file). Each line
gets a fresh tracefs; with --sequence all lines go to one tracefs in order,
as a file of writes would, so a line sees the events earlier lines made
(a duplicate is EEXIST, '-:EV' removes).

Text output: the readback line(s) of an accepted line; for a rejected one
the error_log entry (message, command, caret), then on stderr "hint:"
lines where the model can say more (the nearest symbol, type, register,
variable, parameter or member; why registration failed; the kernel
release a syntax needs). Lines from -f carry a "FILE:LINE: " prefix on
every output line. --errors-only prints rejected lines only.

JSON output: one object per line with line, source (FILE:LINE for -f
lines), file, ok, errno, error, readback, formats, notes and hints.
formats is filled only with --formats, and with --sequence holds each
event once, on the line that created it.
Exits 1 if any line is rejected. Put -- before lines that start with '-'
(removals), or they are taken for flags.`,
		Example: `  ktrace check 'p:myev do_sys_openat2 $arg1'
  ktrace check 'p:bad vfs_read +0(%di'
  ktrace --kernel ../shared/kernels/6.1 check -f probes.txt --output json
  ktrace check --sequence -f setup.txt --errors-only
  echo 'f:ev vfs_read%return $retval' | ktrace check -f -
  ktrace check -- '-:myev'`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if fromFile == "" && len(args) == 0 {
				return &exitError{code: exitUsage, err: fmt.Errorf("check needs LINE arguments or -f FILE (see 'ktrace check --help')")}
			}
			var forced *events.File
			if file != "" {
				f, ok := events.FileNamed(file)
				if !ok {
					return &exitError{code: exitUsage, err: fmt.Errorf("--file must be kprobe_events, dynamic_events, synthetic_events or uprobe_events, not %q", file)}
				}
				forced = &f
			}
			lines := make([]check.Line, 0, len(args))
			for _, a := range args {
				lines = append(lines, check.Line{Text: a})
			}
			if fromFile != "" {
				more, err := check.ReadLines(cmd.InOrStdin(), fromFile)
				if err != nil {
					return failf(exitRejected, "%w", err)
				}
				lines = append(lines, more...)
			}
			e, err := g.loadEnv("kernel")
			if err != nil {
				return err
			}
			out := bufio.NewWriter(cmd.OutOrStdout())
			defer out.Flush()
			checker := check.New(e.model, e.dialect, sequence)
			bad, err := checker.Run(lines, check.Report{File: forced, Formats: formats, ErrorsOnly: errorsOnly, JSON: g.output == "json"}, out, cmd.ErrOrStderr())
			if err != nil {
				return failf(exitRejected, "%w", err)
			}
			if bad {
				return rejected
			}
			return nil
		},
	}
	cmd.Args = usageArgs(cobra.ArbitraryArgs)
	cmd.Flags().StringVarP(&fromFile, "from-file", "f", "", "read lines from `FILE` ('-' for stdin)")
	cmd.Flags().StringVar(&file, "file", "", "control file to write: kprobe_events, dynamic_events, synthetic_events or uprobe_events (default by the line's first byte)")
	cmd.Flags().BoolVar(&sequence, "sequence", false, "write all lines to one tracefs, in order")
	cmd.Flags().BoolVar(&errorsOnly, "errors-only", false, "print rejected lines only")
	cmd.Flags().BoolVar(&formats, "formats", false, "JSON: fill formats with the events' format files")
	return cmd
}
