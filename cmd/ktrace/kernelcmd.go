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
		Long: `info prints the model selected by --kernel: its source, release, version,
architecture, CPU count, the syntax (dialect) check and sh follow, the
number of symbols, and which optional data it has: BTF, the kernel image
(vmlinuz: "image: yes", or what stands in for it), the kernel text for
instruction-boundary and ENDBR64 checks ("text:"), then each fact the model holds and where it came from:
/proc/kallsyms, /sys/kernel/btf/vmlinux, tracefs, debugfs, the running
kernel's text (/proc/kcore or a BPF reader), and the build configuration
when the system shows one (options it lacks are derived from kallsyms).`,
		Example: `  ktrace kernel info
  ktrace --kernel embedded kernel info --output json`,
		Args: usageArgs(cobra.NoArgs),
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
		Long: `capture writes the running kernel's model files (kallsyms, btf,
kprobes_blacklist, available_filter_functions, config, version, cpus and,
when readable, vmlinuz) into DIR, for use with --kernel DIR on another
machine. Reading kallsyms addresses and the kprobe blacklist needs root;
without it capture exits 3 naming what is missing.`,
		Example: `  sudo ktrace kernel capture ./mykernel
  ktrace --kernel ./mykernel check 'p:ev vfs_read'`,
		Args: usageArgs(cobra.ExactArgs(1)),
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
