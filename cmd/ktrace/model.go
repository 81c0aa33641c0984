package main

import (
	"bufio"
	"errors"
	"fmt"
	"runtime/debug"

	"github.com/ktrace-dev/ktrace/catalog"
	"github.com/ktrace-dev/ktrace/kernel"
	"github.com/spf13/cobra"
)

// The verbs that inspect the kernel model: kernel, funcs and args.

func newKernelCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "kernel",
		Short: "Inspect the kernel model or capture the running kernel as a snapshot",
	}
	unknownSubcommand(cmd)
	cmd.AddCommand(&cobra.Command{
		Use:   "info",
		Short: "Describe the kernel model ktrace uses",
		Args:  usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			e, err := g.loadEnv("kernel")
			if err != nil {
				return err
			}
			info := e.model.Info(e.dialect, catalog.NoKprobes(e.model))
			if g.output == "json" {
				return writeJSON(cmd.OutOrStdout(), info)
			}
			info.WriteText(cmd.OutOrStdout())
			return nil
		},
	})
	cmd.AddCommand(&cobra.Command{
		Use:   "capture DIR",
		Short: "Write a snapshot of the running kernel to DIR",
		Args:  usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			// Without kprobes there is no blacklist to read: say so,
			// rather than blame debugfs.
			if m, err := kernel.LoadHost(); err == nil {
				if why := catalog.NoKprobes(m); why != "" {
					return &exitError{code: exitNoAccess, err: fmt.Errorf("kernel capture: %s; a snapshot models kprobe events, which it cannot run", why)}
				}
			}
			if err := kernel.Capture(args[0]); err != nil {
				return &exitError{code: codeForSystemError(err, true), err: fmt.Errorf("kernel capture: %w", err)}
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "ktrace: captured the running kernel into %s\n", args[0])
			return nil
		},
	})
	return cmd
}

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

func newArgsCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "args FUNC | args SYSTEM:EVENT",
		Short: "Show a function's BTF signature and how to fetch each parameter, or a tracepoint's fields",
		Args:  usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			e, err := g.loadEnv("kernel")
			if err != nil {
				return err
			}
			res, err := catalog.Describe(e.model, e.dialect, args[0])
			if err != nil {
				return &exitError{code: exitRejected, err: err}
			}
			if g.output == "json" {
				return writeJSON(cmd.OutOrStdout(), res)
			}
			res.WriteText(cmd.OutOrStdout())
			return nil
		},
	}
	return cmd
}
