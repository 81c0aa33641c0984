package main

import (
	"fmt"

	"github.com/ktrace-dev/ktrace/internal/complete"
	"github.com/ktrace-dev/ktrace/kernel"
	"github.com/spf13/cobra"
)

// seeHelp names the help of cmd for a usage error: "see 'ktrace kernel
// info --help'".
func seeHelp(cmd *cobra.Command) string {
	return fmt.Sprintf("see '%s --help'", cmd.CommandPath())
}

// unknownSubcommand makes a command that only groups subcommands reject
// an unknown one with exit 2 (cobra would print its help and exit 0).
func unknownSubcommand(cmd *cobra.Command) {
	cmd.Args = cobra.ArbitraryArgs
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if len(args) == 0 {
			return cmd.Help()
		}
		return &exitError{code: exitUsage, err: fmt.Errorf("unknown command %q for %q (%s)", args[0], cmd.CommandPath(), seeHelp(cmd))}
	}
}

// completion

func noFileComp(vals []string) ([]string, cobra.ShellCompDirective) {
	return vals, cobra.ShellCompDirectiveNoFileComp
}

// registerFlagCompletions completes the global flags' values.
func registerFlagCompletions(root *cobra.Command) {
	root.RegisterFlagCompletionFunc("kernel", func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		return complete.Kernels(toComplete), cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveNoSpace
	})
	root.RegisterFlagCompletionFunc("syntax", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return noFileComp([]string{"kernel\tthe model's release", "latest\t6.12's syntax on any model"})
	})
	root.RegisterFlagCompletionFunc("output", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return noFileComp([]string{"text", "json"})
	})
}

// completeFuncs completes function names of the model ('ktrace funcs',
// 'ktrace args').
func completeFuncs(g *globals) func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return withModel(g, complete.Funcs)
}

// completeLine completes a probe line's last word with function names
// when it is the probe place ("p:ev vfs_re" -> "p:ev vfs_read").
func completeLine(g *globals) func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return withModel(g, complete.Line)
}

// withModel completes with the candidates f finds in the model.
func withModel(g *globals, f func(*kernel.Model, string) []string) func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		m, err := kernel.Open(g.kernel)
		if err != nil {
			return nil, cobra.ShellCompDirectiveError
		}
		return noFileComp(f(m, toComplete))
	}
}

// completeEvents completes the session's GROUP/EVENT names (and, for
// enable, the disabled ones; for disable, the enabled ones).
func completeEvents(g *globals, want func(enabled bool) bool) func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		s, err := g.loadSession()
		if err != nil {
			return nil, cobra.ShellCompDirectiveError
		}
		return noFileComp(complete.Events(s.Reg, toComplete, args, want))
	}
}
