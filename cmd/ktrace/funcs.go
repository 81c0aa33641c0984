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
		Long: `funcs lists the kernel model's functions whose name matches a GLOB
('*', '?', '[...]'; "MOD:GLOB" for module functions; no GLOB lists all),
one per line, sorted, each with how it can be probed: "kprobe" (p and r
lines in kprobe_events), "fprobe" (f lines in dynamic_events, through
ftrace), both, or "none", followed by the kernel's reason for each kind
it refuses: not unique (several kallsyms entries: NON_UNIQ_SYMBOL),
notrace (no ftrace location), blacklisted (the kprobe blacklist entry),
not kernel text, a patch site, not in available_filter_functions, no
such symbol, module not loaded. These are the verdicts the kernel's
checks give for "p FUNC" and "f FUNC" on the model. The "__pfx_" padding
symbols before functions (CONFIG_CALL_PADDING) are listed only when a
GLOB starts with __pfx_.

With -t it lists tracepoints (SYSTEM:EVENT globs, or EVENT globs for any
system) from the model's tracefs formats, each with whether a t event
can attach to it. The embedded model carries the 6.12.95 formats; a
snapshot DIR has them in DIR/tracepoints; for the running kernel they are
read from tracefs. A model without formats lists the tracepoints kallsyms
names (__tracepoint_NAME), whose systems it does not know, and says so.

JSON output: one object per line (JSON Lines).`,
		Example: `  ktrace funcs 'vfs_rea*'
  ktrace funcs do_int3 __schedule 'ext4:*'
  ktrace funcs -t 'sched:*'
  ktrace funcs -o json 'tcp_v4_*'`,
		Args: usageArgs(cobra.ArbitraryArgs),
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
