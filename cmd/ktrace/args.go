package main

import (
	"github.com/ktrace-dev/ktrace/catalog"
	"github.com/spf13/cobra"
)

func newArgsCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "args FUNC | args SYSTEM:EVENT",
		Short: "Show a function's BTF signature and how to fetch each parameter, or a tracepoint's fields",
		Long: `args prints the BTF prototype of FUNC ("MOD:FUNC" for a module
function) and, for each parameter, its C type, the fetch argument that
reads it at the function's entry ($argN where the syntax has BTF
arguments, else the register or stack slot), the register, and the type
the kernel gives that fetch argument when the line names none (what the
format file shows: s32, u64, x64, ...). The last row is the return
value ($retval on return probes).

For SYSTEM:EVENT it prints the tracepoint's fields from its format file
(the common_* header left out) and, where the model has the tracepoint's
__probestub_ function (Linux 6.10+), the arguments a t event reads.

JSON output: {"function" or "tracepoint", "signature", "params": [{"name",
"type", "fetch", "reg", "fetch_type", "error"}], "return", "fields":
[{"name", "type", "offset", "size", "signed"}], "notes"}.`,
		Example: `  ktrace args do_sys_openat2
  ktrace args vfs_read --output json
  ktrace args sched:sched_switch
  ktrace --kernel ../shared/kernels/6.1 args do_sys_openat2`,
		Args: usageArgs(cobra.ExactArgs(1)),
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
