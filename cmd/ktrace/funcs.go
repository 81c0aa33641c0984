package main

import (
	"bufio"
	"errors"
	"runtime/debug"

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
			switch err := catalog.List(out, cmd.ErrOrStderr(), e.model, e.dialect, args, tracepoints, g.output == "json"); {
			case errors.Is(err, catalog.ErrBadGlob):
				return &exitError{code: exitUsage, err: err}
			case err != nil:
				return &exitError{code: exitRejected, err: err}
			}
			return nil
		},
	}
	cmd.Flags().BoolVarP(&tracepoints, "tracepoints", "t", false, "list tracepoints (SYSTEM:EVENT globs) instead of functions")
	return cmd
}
