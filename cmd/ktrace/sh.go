package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/ktrace-dev/ktrace/shell"
	"github.com/spf13/cobra"
	"golang.org/x/term"
)

func newShCmd(g *globals) *cobra.Command {
	var command string
	cmd := &cobra.Command{
		Use:   "sh [SCRIPT [ARG...]] | sh -c CMD [ARG0 [ARG...]]",
		Short: "Run a shell script against the emulated tracefs",
		Args:  usageArgs(cobra.ArbitraryArgs),
		RunE: func(cmd *cobra.Command, args []string) (err error) {
			// A script is parsed whole before anything is set up; a
			// terminal is read line by line.
			var script *shell.Script
			switch {
			case cmd.Flags().Changed("command"):
				name, params := "sh", []string(nil)
				if len(args) > 0 {
					name, params = args[0], args[1:]
				}
				script, err = shell.Parse(strings.NewReader(command), name, params)
			case len(args) > 0:
				f, ferr := os.Open(args[0])
				if ferr != nil {
					return failf(exitRejected, "sh: %w", ferr)
				}
				defer f.Close()
				script, err = shell.Parse(f, args[0], args[1:])
			default:
				f, ok := cmd.InOrStdin().(*os.File)
				if ok && term.IsTerminal(int(f.Fd())) {
					script = shell.Interactive(f)
				} else {
					script, err = shell.Parse(cmd.InOrStdin(), "sh", nil)
				}
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
