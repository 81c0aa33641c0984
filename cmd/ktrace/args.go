package main

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/cilium/ebpf/btf"
	"github.com/ktrace-dev/ktrace/fetchargs"
	"github.com/ktrace-dev/ktrace/grammar"
	"github.com/ktrace-dev/ktrace/kernel"
	"github.com/spf13/cobra"
)

// argInfo is one parameter (or the return value) of a function as
// `ktrace args` shows it.
type argInfo struct {
	Name string `json:"name"`
	// Type is the parameter's C type from BTF.
	Type string `json:"type"`
	// Fetch is the fetch argument that reads it at the function entry
	// ($argN with BTF arguments, else the register or stack slot), Reg
	// the register or stack slot itself.
	Fetch string `json:"fetch"`
	Reg   string `json:"reg"`
	// FetchType is the type the kernel gives the argument when the line
	// names none, as its format file shows after ':' (s32, x64, ...);
	// null when the kernel rejects the fetch, Error then says why.
	FetchType *string `json:"fetch_type"`
	Error     *string `json:"error"`
}

// fieldInfo is one field of a tracepoint's format.
type fieldInfo struct {
	Name   string `json:"name"`
	Type   string `json:"type"`
	Offset int    `json:"offset"`
	Size   int    `json:"size"`
	Signed bool   `json:"signed"`
}

// argsResult is `ktrace args --output json`.
type argsResult struct {
	Function   string      `json:"function,omitempty"`
	Tracepoint string      `json:"tracepoint,omitempty"`
	Signature  string      `json:"signature"`
	Params     []argInfo   `json:"params"`
	Return     *argInfo    `json:"return"`
	Fields     []fieldInfo `json:"fields"`
	Notes      []string    `json:"notes"`
}

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
			spec := args[0]
			var res *argsResult
			if isTracepointSpec(e.model, spec) {
				res, err = tracepointArgs(e, spec)
			} else {
				res, err = functionArgs(e, spec)
			}
			if err != nil {
				return err
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

// isTracepointSpec reports whether spec names a tracepoint rather than a
// module function: "SYSTEM:EVENT" where SYSTEM is no loaded module and
// EVENT a tracepoint of kallsyms or SYSTEM a system of the model's
// formats.
func isTracepointSpec(m *kernel.Model, spec string) bool {
	sys, name, ok := strings.Cut(spec, ":")
	if !ok || m.ModuleLoaded(sys) {
		return false
	}
	if m.HasTracepoint(name) {
		return true
	}
	tps, _, err := m.Tracepoints()
	if err != nil {
		return false
	}
	for _, t := range tps {
		if t.System == sys {
			return true
		}
	}
	return false
}

// functionArgs describes FUNC from its BTF prototype.
func functionArgs(e *env, spec string) (*argsResult, error) {
	_, name, _ := strings.Cut(spec, ":")
	if name == "" {
		name = spec
	}
	m := e.model
	fn, proto, err := m.FuncProto(name)
	if err != nil {
		if errors.Is(err, kernel.ErrNoBTF) {
			return nil, failf(exitRejected, "args %s: the kernel model has no BTF", spec)
		}
		msg := fmt.Sprintf("args %s: no BTF function %s in the model", spec, name)
		if n, ok := m.NearestFunc(spec); ok {
			msg += "\nhint: did you mean " + n + "?"
		}
		return nil, failf(exitRejected, "%s", msg)
	}
	res := &argsResult{Function: spec, Params: []argInfo{}, Notes: []string{}}
	res.Params = paramInfos(e, fetchargs.KProbe, name, proto)
	ret := returnInfo(e, name, proto)
	res.Return = &ret
	res.Signature = signature(fn.Name, proto)
	if n := m.NumberOfSameSymbols(spec); n > 1 {
		res.Notes = append(res.Notes, fmt.Sprintf("%d kallsyms entries are named %s: BTF describes the first; a kprobe on the name is NON_UNIQ_SYMBOL", n, name))
	} else if n == 0 {
		res.Notes = append(res.Notes, fmt.Sprintf("kallsyms has no %s (inlined or not built): BTF describes it but no probe can attach", spec))
	}
	if !e.dialect.BTFArgs {
		res.Notes = append(res.Notes, fmt.Sprintf("Linux %s has no BTF arguments: fetch them by register; --syntax latest gives $argN, names and BTF types (through eBPF)", e.dialect.Name))
	}
	return res, nil
}

// paramInfos describes each parameter of proto as a probe on fn reads
// it, by parsing the fetch argument as the kernel would.
func paramInfos(e *env, kind fetchargs.ProbeKind, fn string, proto *btf.FuncProto) []argInfo {
	out := []argInfo{}
	regs := e.model.Arch().ArgRegs
	head := "p:ktrace_args"
	place := fn
	if kind == fetchargs.TProbe {
		head, place = "t:ktrace_args", strings.TrimPrefix(fn, "__probestub_")
	}
	for i, p := range proto.Params {
		a := argInfo{Name: p.Name, Type: kernel.CType(p.Type)}
		if i < len(regs) {
			a.Reg = "%" + regs[i]
		} else {
			// Past the register arguments, the stack: slot 0 holds the
			// return address at the function's entry.
			a.Reg = fmt.Sprintf("$stack%d", i-len(regs)+1)
		}
		a.Fetch = a.Reg
		if e.dialect.BTFArgs {
			a.Fetch = fmt.Sprintf("$arg%d", i+1)
		}
		if kind == fetchargs.TProbe {
			a.Reg = ""
		}
		// The kernel's two passes over the line "HEAD FUNC FETCH": the
		// $argN expansion from BTF, then the argument parser.
		ctx := &fetchargs.Context{Model: e.model, Dialect: e.dialect, Kind: kind, Entry: kind == fetchargs.KProbe, Func: fn}
		parsed, err := parseOne(ctx, []string{head, place, a.Fetch})
		if err != nil {
			msg := fetchErrorText(e, err)
			a.Error = &msg
		} else {
			t := parsed.Type.Name
			if parsed.Count > 0 {
				t = fmt.Sprintf("%s[%d]", t, parsed.Count)
			}
			a.FetchType = &t
		}
		out = append(out, a)
	}
	return out
}

// returnInfo describes the return value as "$retval" on a return probe.
func returnInfo(e *env, fn string, proto *btf.FuncProto) argInfo {
	a := argInfo{Name: "return", Type: kernel.CType(proto.Return), Fetch: "$retval", Reg: "%" + e.model.Arch().RetReg}
	ctx := &fetchargs.Context{Model: e.model, Dialect: e.dialect, Kind: fetchargs.KProbe, Return: true, Func: fn}
	parsed, err := parseOne(ctx, []string{"r:ktrace_args", fn, "$retval"})
	if err != nil {
		msg := fetchErrorText(e, err)
		a.Error = &msg
	} else {
		t := parsed.Type.Name
		a.FetchType = &t
	}
	return a
}

// parseOne parses the one fetch argument of argv (HEAD PLACE FETCH) as
// the kernel does: PrepareArgs, then Parse.
func parseOne(ctx *fetchargs.Context, argv []string) (*fetchargs.Arg, error) {
	toks, err := fetchargs.PrepareArgs(ctx, argv)
	if err != nil {
		return nil, err
	}
	if len(toks) != 1 {
		return nil, fmt.Errorf("%s expands to %d arguments", argv[2], len(toks))
	}
	return fetchargs.Parse(ctx, toks[0], 0, nil)
}

// fetchErrorText is the error_log message (with its code) of a rejected
// fetch argument.
func fetchErrorText(e *env, err error) string {
	var ge *grammar.Error
	if errors.As(err, &ge) {
		if ge.Code == grammar.ErrNone {
			return fmt.Sprintf("%s (the kernel logs nothing)", grammar.Strerror(ge.Errno))
		}
		return fmt.Sprintf("%s (%s)", e.dialect.Message(ge.Code), ge.Code.Name())
	}
	return err.Error()
}

// tracepointArgs describes SYSTEM:EVENT: its format's fields and the
// arguments a t event reads.
func tracepointArgs(e *env, spec string) (*argsResult, error) {
	_, name, _ := strings.Cut(spec, ":")
	res := &argsResult{Tracepoint: spec, Params: []argInfo{}, Fields: []fieldInfo{}, Notes: []string{}}
	tp, err := findTracepoint(e.model, spec)
	switch {
	case err == nil:
		for _, f := range tp.Fields() {
			if f.Common {
				continue
			}
			res.Fields = append(res.Fields, fieldInfo{Name: f.Name, Type: f.Type, Offset: f.Offset, Size: f.Size, Signed: f.Signed})
		}
	case errors.Is(err, kernel.ErrNoTracepoints):
		res.Notes = append(res.Notes, fmt.Sprintf("%v: its fields are unknown (a snapshot DIR has them in tracepoints/, copied from tracefs)", err))
	default:
		msg := fmt.Sprintf("args %s: %v", spec, err)
		if tps, _, terr := e.model.Tracepoints(); terr == nil {
			var names []string
			for _, t := range tps {
				names = append(names, t.System+":"+t.Name)
			}
			if n, ok := grammar.Closest(spec, names); ok {
				msg += "\nhint: did you mean " + n + "?"
			}
		}
		return nil, failf(exitRejected, "%s", msg)
	}
	stub := "__probestub_" + name
	_, proto, perr := e.model.FuncProto(stub)
	switch {
	case !e.model.HasProbeStub(name) || perr != nil:
		res.Notes = append(res.Notes, fmt.Sprintf("the model has no %s (Linux 6.10+): t events cannot type this tracepoint's arguments", stub))
		res.Signature = spec
	default:
		res.Signature = signature(stub, proto)
		// The stub's first parameter is the tracepoint's private data,
		// which a t event does not count among its arguments.
		p := *proto
		if len(p.Params) > 0 && p.Params[0].Name == "__data" {
			p.Params = p.Params[1:]
		}
		res.Params = paramInfos(e, fetchargs.TProbe, stub, &p)
		if !e.dialect.Fprobe {
			res.Notes = append(res.Notes, fmt.Sprintf("t events need Linux 6.12; the model's kernel is %s: --syntax latest runs them through eBPF", e.dialect.Name))
		}
	}
	return res, nil
}

// signature is the C prototype of name.
func signature(name string, proto *btf.FuncProto) string {
	var ps []string
	for _, p := range proto.Params {
		ps = append(ps, kernel.CDecl(p.Type, p.Name))
	}
	if len(ps) == 0 {
		ps = append(ps, "void")
	}
	return kernel.CDecl(proto.Return, name+"("+strings.Join(ps, ", ")+")")
}

func printArgs(out io.Writer, r *argsResult) {
	fmt.Fprintln(out, r.Signature)
	if len(r.Params) > 0 || r.Return != nil {
		rows := [][]string{{"PARAM", "TYPE", "FETCH", "REG", "DEFAULT"}}
		row := func(a argInfo) {
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
