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
