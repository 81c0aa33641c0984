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
			m := e.model
			major, minor, patch := m.KernelVersion()
			info := struct {
				Source   string        `json:"source"`
				Release  string        `json:"release"`
				Version  string        `json:"version"`
				Arch     string        `json:"arch"`
				CPUs     int           `json:"cpus"`
				Syntax   string        `json:"syntax"`
				Symbols  int           `json:"symbols"`
				BTF      bool          `json:"btf"`
				BTFArgs  bool          `json:"btf_args"`
				Fprobe   bool          `json:"fprobe"`
				BTFError string        `json:"btf_error,omitempty"`
				Image    string        `json:"image"`
				Text     string        `json:"text"`
				Facts    []kernel.Fact `json:"facts"`
			}{
				Source:  m.Source(),
				Release: m.Release(),
				Version: fmt.Sprintf("%d.%d.%d", major, minor, patch),
				Arch:    m.Arch().Name,
				CPUs:    m.CPUs(),
				Syntax:  e.dialect.Name,
				Symbols: m.NumSymbols(),
				BTF:     m.BTF() != nil,
				BTFArgs: e.dialect.BTFArgs,
				Fprobe:  e.dialect.Fprobe,
			}
			if err := m.BTFError(); err != nil {
				info.BTFError = err.Error()
			}
			// Asking for the text opens the running kernel's text
			// reader, so its fact is among the facts below.
			info.Text = "none (instruction boundaries and ENDBR64 not checked)"
			if m.TextKnown() {
				info.Text = "yes"
			}
			switch {
			case m.HasImage():
				info.Image = "yes"
			case m.Source() == "embedded":
				info.Image = "no (a text table computed from the 6.12.95 image stands in for it)"
			case m.Source() == "host":
				info.Image = "no (the running kernel's text stands in for it where readable)"
			default:
				info.Image = "no (the snapshot has no vmlinuz)"
			}
			info.Facts = m.Facts()
			if why := catalog.NoKprobes(m); why != "" && m.Source() == "host" {
				for i, f := range info.Facts {
					if f.Name == "kprobe blacklist" {
						info.Facts[i].Source = "none: " + why
					}
				}
			}
			if g.output == "json" {
				return writeJSON(cmd.OutOrStdout(), info)
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "source:   %s\n", info.Source)
			fmt.Fprintf(out, "release:  %s\n", info.Release)
			fmt.Fprintf(out, "version:  %s\n", info.Version)
			fmt.Fprintf(out, "arch:     %s\n", info.Arch)
			fmt.Fprintf(out, "cpus:     %d\n", info.CPUs)
			fmt.Fprintf(out, "syntax:   %s (BTF args %v, fprobe %v)\n", info.Syntax, info.BTFArgs, info.Fprobe)
			fmt.Fprintf(out, "symbols:  %d\n", info.Symbols)
			if info.BTF {
				fmt.Fprintf(out, "btf:      yes\n")
			} else {
				fmt.Fprintf(out, "btf:      no (%s)\n", info.BTFError)
			}
			fmt.Fprintf(out, "image:    %s\n", info.Image)
			fmt.Fprintf(out, "text:     %s\n", info.Text)
			fmt.Fprintf(out, "facts:\n")
			for _, f := range info.Facts {
				fmt.Fprintf(out, "  %-22s %-14s %s\n", f.Name, f.Value, f.Source)
			}
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
