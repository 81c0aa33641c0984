package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"strings"

	"github.com/ktrace-dev/ktrace/catalog"
	"github.com/spf13/cobra"
)

func newFuncsCmd(g *globals) *cobra.Command {
	var tracepoints bool
	cmd := &cobra.Command{
		Use:   "funcs [GLOB...] | funcs -t [SYSTEM:EVENT...]",
		Short: "List the model's functions (or tracepoints) and how each can be probed",
		Args:  usageArgs(cobra.ArbitraryArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			// A listing allocates little beside the model, and is
			// short-lived: collect the garbage less often.
			debug.SetGCPercent(400)
			e, err := g.loadEnv("kernel")
			if err != nil {
				return err
			}
			out := bufio.NewWriterSize(cmd.OutOrStdout(), 64*1024)
			defer out.Flush()
			if tracepoints {
				return listTracepoints(e, g.output == "json", args, out, cmd.ErrOrStderr())
			}
			return listFuncs(e, g.output == "json", args, out, cmd.ErrOrStderr())
		},
	}
	cmd.Flags().BoolVarP(&tracepoints, "tracepoints", "t", false, "list tracepoints (SYSTEM:EVENT globs) instead of functions")
	return cmd
}

func listFuncs(e *env, asJSON bool, globs []string, out io.Writer, stderr io.Writer) error {
	fs, notes, err := catalog.Functions(e.model, e.dialect, globs)
	if err != nil {
		return &exitError{code: exitUsage, err: err}
	}
	for _, n := range notes {
		if !strings.HasPrefix(n, "hint: ") {
			n = "ktrace: " + n
		}
		fmt.Fprintln(stderr, n)
	}
	if err := catalog.WriteFuncs(out, fs, asJSON); err != nil {
		return failf(exitRejected, "encode: %w", err)
	}
	if len(fs) == 0 && len(globs) > 0 {
		fmt.Fprintf(stderr, "ktrace: no function of the model matches %s\n", quoteAll(globs))
		return rejected
	}
	return nil
}

// quoteAll is the globs, each in single quotes, space-separated.
func quoteAll(s []string) string {
	out := make([]string, len(s))
	for i, x := range s {
		out[i] = "'" + x + "'"
	}
	return strings.Join(out, " ")
}

func listTracepoints(e *env, asJSON bool, globs []string, out io.Writer, stderr io.Writer) error {
	tps, notes, err := catalog.Tracepoints(e.model, e.dialect, globs)
	for _, n := range notes {
		fmt.Fprintf(stderr, "ktrace: %s\n", n)
	}
	switch {
	case errors.Is(err, catalog.ErrBadGlob):
		return &exitError{code: exitUsage, err: fmt.Errorf("funcs -t: %w", err)}
	case err != nil:
		return &exitError{code: exitRejected, err: err}
	}
	if err := catalog.WriteTracepoints(out, tps, asJSON); err != nil {
		return failf(exitRejected, "encode: %w", err)
	}
	if len(tps) == 0 && len(globs) > 0 {
		fmt.Fprintf(stderr, "ktrace: no tracepoint of the model matches %s\n", quoteAll(globs))
		return rejected
	}
	return nil
}
