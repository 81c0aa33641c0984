package main

import (
	"fmt"

	"github.com/ktrace-dev/ktrace/catalog"
	"github.com/ktrace-dev/ktrace/kernel"
	"github.com/spf13/cobra"
)

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
