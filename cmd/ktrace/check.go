package main

import (
	"bufio"
	"encoding/json"
	"fmt"

	"github.com/ktrace-dev/ktrace/check"
	"github.com/ktrace-dev/ktrace/events"
	"github.com/ktrace-dev/ktrace/tracefs"
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
			var forced *tracefs.ControlFile
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
			stderr := cmd.ErrOrStderr()
			checker := check.New(e.model, e.dialect, sequence)
			shown := map[string]string{} // GROUP/EVENT -> format given
			enc := json.NewEncoder(out)
			// No HTML escaping, so "->" in print formats stays readable.
			enc.SetEscapeHTML(false)
			bad := false
			for _, sl := range lines {
				f := check.DefaultFile(sl.Text)
				if forced != nil {
					f = *forced
				}
				r := checker.Check(sl.Text, f)
				if sl.File != "" {
					src := fmt.Sprintf("%s:%d", sl.File, sl.No)
					r.Source = &src
				}
				// Formats only on request, each event once per run when
				// the events live on from line to line.
				if !formats {
					r.Formats = map[string]string{}
				} else if sequence {
					for k, v := range r.Formats {
						if shown[k] == v {
							delete(r.Formats, k)
							continue
						}
						shown[k] = v
					}
				}
				if !r.OK {
					bad = true
				} else if errorsOnly {
					continue
				}
				if g.output == "json" {
					if err := enc.Encode(r); err != nil {
						return failf(exitRejected, "encode result: %w", err)
					}
					continue
				}
				prefix := ""
				if r.Source != nil {
					prefix = *r.Source + ": "
				}
				r.WriteText(out, prefix)
				// Hints follow the entry they explain.
				if len(r.Hints) > 0 {
					out.Flush()
					for _, h := range r.Hints {
						fmt.Fprintf(stderr, "%shint: %s\n", prefix, h)
					}
				}
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
