package main

import (
	"fmt"
	"io"
	"strings"

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
			printArgs(cmd.OutOrStdout(), res)
			return nil
		},
	}
	return cmd
}

func printArgs(out io.Writer, r *catalog.Args) {
	fmt.Fprintln(out, r.Signature)
	if len(r.Params) > 0 || r.Return != nil {
		rows := [][]string{{"PARAM", "TYPE", "FETCH", "REG", "DEFAULT"}}
		row := func(a catalog.Arg) {
			ft := "-"
			if a.FetchType != nil {
				ft = *a.FetchType
			} else if a.Error != nil {
				ft = "rejected: " + *a.Error
			}
			rows = append(rows, []string{a.Name, a.Type, a.Fetch, a.Reg, ft})
		}
		for _, a := range r.Params {
			row(a)
		}
		if r.Return != nil {
			row(*r.Return)
		}
		printTable(out, rows)
	}
	if len(r.Fields) > 0 {
		if len(r.Params) > 0 {
			fmt.Fprintln(out)
		}
		rows := [][]string{{"FIELD", "TYPE", "OFFSET", "SIZE", "SIGNED"}}
		for _, f := range r.Fields {
			s := "0"
			if f.Signed {
				s = "1"
			}
			rows = append(rows, []string{f.Name, f.Type, fmt.Sprint(f.Offset), fmt.Sprint(f.Size), s})
		}
		printTable(out, rows)
	}
	for _, n := range r.Notes {
		fmt.Fprintf(out, "# note: %s\n", n)
	}
}

// printTable prints rows in columns two spaces apart.
func printTable(out io.Writer, rows [][]string) {
	var w []int
	for _, r := range rows {
		for i, c := range r {
			if i >= len(w) {
				w = append(w, 0)
			}
			w[i] = max(w[i], len(c))
		}
	}
	for _, r := range rows {
		var b strings.Builder
		b.WriteString("  ")
		for i, c := range r {
			if i == len(r)-1 {
				b.WriteString(c)
				break
			}
			b.WriteString(c)
			b.WriteString(strings.Repeat(" ", w[i]-len(c)+2))
		}
		fmt.Fprintln(out, strings.TrimRight(b.String(), " "))
	}
}
