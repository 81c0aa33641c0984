package main

import (
	"errors"
	"fmt"

	"github.com/ktrace-dev/ktrace/shell"
	"github.com/spf13/cobra"
)

func newShCmd(g *globals) *cobra.Command {
	var command string
	cmd := &cobra.Command{
		Use:   "sh [SCRIPT [ARG...]] | sh -c CMD [ARG0 [ARG...]]",
		Short: "Run a shell script against the emulated tracefs",
		Args:  usageArgs(cobra.ArbitraryArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			// A script is parsed whole before anything is set up; a
			// terminal is read line by line.
			var c *string
			if cmd.Flags().Changed("command") {
				c = &command
			}
			script, err := shell.Load(c, args, cmd.InOrStdin())
			if oe := (*shell.OpenError)(nil); errors.As(err, &oe) {
				return failf(exitRejected, "sh: %w", err)
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
