package main

import (
	"github.com/ktrace-dev/ktrace/catalog"
	"github.com/spf13/cobra"
)

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
