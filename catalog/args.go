package catalog

import (
	"errors"
	"fmt"
	"strings"

	"github.com/cilium/ebpf/btf"

	"github.com/ktrace-dev/ktrace/fetchargs"
	"github.com/ktrace-dev/ktrace/grammar"
	"github.com/ktrace-dev/ktrace/kernel"
)

// ErrNotFound is wrapped by the errors for a function or tracepoint the
// model cannot describe (the message may carry a "did you mean" hint).
var ErrNotFound = errors.New("not found")

// Decl is a name with its C type: a function's parameter or return value
// (its type from BTF), or a tracepoint's field (from its format).
type Decl struct {
	Name string `json:"name"`
	Type string `json:"type"`
}

// Arg is one parameter (or the return value) of a function.
type Arg struct {
	Decl
	// Fetch is the fetch argument that reads it at the function entry
	// ($argN with BTF arguments, else the register or stack slot), Reg
	// the register or stack slot itself.
	Fetch string `json:"fetch"`
	Reg   string `json:"reg"`
	// FetchType is the type the kernel gives the argument when the line
	// names none, as its format file shows after ':' (s32, x64, ...);
	// nil when the kernel rejects the fetch, Error then says why.
	FetchType *string `json:"fetch_type"`
	Error     *string `json:"error"`
}

// Field is one field of a tracepoint's format.
type Field struct {
	Decl
	Offset int  `json:"offset"`
	Size   int  `json:"size"`
	Signed bool `json:"signed"`
}

// Args describes a function or a tracepoint (`ktrace args`).
type Args struct {
	Function   string   `json:"function,omitempty"`
	Tracepoint string   `json:"tracepoint,omitempty"`
	Signature  string   `json:"signature"`
	Params     []Arg    `json:"params"`
	Return     *Arg     `json:"return"`
	Fields     []Field  `json:"fields"`
	Notes      []string `json:"notes"`
}

// Describe describes spec: "SYSTEM:EVENT" for a tracepoint, else FUNC or
// "MOD:FUNC", as the kernel of dialect d on model m sees it.
func Describe(m *kernel.Model, d *grammar.Dialect, spec string) (*Args, error) {
	if isTracepointSpec(m, spec) {
		return tracepointArgs(m, d, spec)
	}
	return functionArgs(m, d, spec)
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
func functionArgs(m *kernel.Model, d *grammar.Dialect, spec string) (*Args, error) {
	_, name, _ := strings.Cut(spec, ":")
	if name == "" {
		name = spec
	}
	fn, proto, err := m.FuncProto(name)
	if err != nil {
		if errors.Is(err, kernel.ErrNoBTF) {
			return nil, &notFound{fmt.Sprintf("args %s: the kernel model has no BTF", spec)}
		}
		msg := fmt.Sprintf("args %s: no BTF function %s in the model", spec, name)
		if n, ok := m.NearestFunc(spec); ok {
			msg += "\nhint: did you mean " + n + "?"
		}
		return nil, &notFound{msg}
	}
	res := &Args{Function: spec, Notes: []string{}}
	res.Params = paramArgs(m, d, fetchargs.KProbe, name, proto)
	ret := returnArg(m, d, name, proto)
	res.Return = &ret
	res.Signature = Signature(fn.Name, proto)
	if n := m.NumberOfSameSymbols(spec); n > 1 {
		res.Notes = append(res.Notes, fmt.Sprintf("%d kallsyms entries are named %s: BTF describes the first; a kprobe on the name is NON_UNIQ_SYMBOL", n, name))
	} else if n == 0 {
		res.Notes = append(res.Notes, fmt.Sprintf("kallsyms has no %s (inlined or not built): BTF describes it but no probe can attach", spec))
	}
	if !d.BTFArgs {
		res.Notes = append(res.Notes, fmt.Sprintf("Linux %s has no BTF arguments: fetch them by register; --syntax latest gives $argN, names and BTF types (through eBPF)", d.Name))
	}
	return res, nil
}

// notFound is an ErrNotFound whose message is all of its text.
type notFound struct{ msg string }

func (e *notFound) Error() string { return e.msg }
func (e *notFound) Unwrap() error { return ErrNotFound }

// paramArgs describes each parameter of proto as a probe on fn reads
// it, by parsing the fetch argument as the kernel would.
func paramArgs(m *kernel.Model, d *grammar.Dialect, kind fetchargs.ProbeKind, fn string, proto *btf.FuncProto) []Arg {
	out := []Arg{}
	regs := m.Arch().ArgRegs
	head := "p:ktrace_args"
	place := fn
	if kind == fetchargs.TProbe {
		head, place = "t:ktrace_args", strings.TrimPrefix(fn, "__probestub_")
	}
	for i, p := range proto.Params {
		a := Arg{Decl: Decl{Name: p.Name, Type: kernel.CType(p.Type)}}
		if i < len(regs) {
			a.Reg = "%" + regs[i]
		} else {
			// Past the register arguments, the stack: slot 0 holds the
			// return address at the function's entry.
			a.Reg = fmt.Sprintf("$stack%d", i-len(regs)+1)
		}
		a.Fetch = a.Reg
		if d.BTFArgs {
			a.Fetch = fmt.Sprintf("$arg%d", i+1)
		}
		if kind == fetchargs.TProbe {
			a.Reg = ""
		}
		// The kernel's two passes over the line "HEAD FUNC FETCH": the
		// $argN expansion from BTF, then the argument parser.
		ctx := &fetchargs.Context{Model: m, Dialect: d, Kind: kind, Entry: kind == fetchargs.KProbe, Func: fn}
		parsed, err := parseOne(ctx, []string{head, place, a.Fetch})
		if err != nil {
			msg := fetchErrorText(d, err)
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

// returnArg describes the return value as "$retval" on a return probe.
func returnArg(m *kernel.Model, d *grammar.Dialect, fn string, proto *btf.FuncProto) Arg {
	a := Arg{Decl: Decl{Name: "return", Type: kernel.CType(proto.Return)}, Fetch: "$retval", Reg: "%" + m.Arch().RetReg}
	ctx := &fetchargs.Context{Model: m, Dialect: d, Kind: fetchargs.KProbe, Return: true, Func: fn}
	parsed, err := parseOne(ctx, []string{"r:ktrace_args", fn, "$retval"})
	if err != nil {
		msg := fetchErrorText(d, err)
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
func fetchErrorText(d *grammar.Dialect, err error) string {
	var ge *grammar.Error
	if errors.As(err, &ge) {
		if ge.Code == grammar.ErrNone {
			return fmt.Sprintf("%s (the kernel logs nothing)", grammar.Strerror(ge.Errno))
		}
		return fmt.Sprintf("%s (%s)", d.Message(ge.Code), ge.Code.Name())
	}
	return err.Error()
}

// tracepointArgs describes SYSTEM:EVENT: its format's fields and the
// arguments a t event reads.
func tracepointArgs(m *kernel.Model, d *grammar.Dialect, spec string) (*Args, error) {
	_, name, _ := strings.Cut(spec, ":")
	res := &Args{Tracepoint: spec, Params: []Arg{}, Fields: []Field{}, Notes: []string{}}
	tp, err := FindTracepoint(m, spec)
	switch {
	case err == nil:
		for _, f := range tp.Fields() {
			if f.Common {
				continue
			}
			res.Fields = append(res.Fields, Field{Decl: Decl{Name: f.Name, Type: f.Type}, Offset: f.Offset, Size: f.Size, Signed: f.Signed})
		}
	case errors.Is(err, kernel.ErrNoTracepoints):
		res.Notes = append(res.Notes, fmt.Sprintf("%v: its fields are unknown (a snapshot DIR has them in tracepoints/, copied from tracefs)", err))
	default:
		msg := fmt.Sprintf("args %s: %v", spec, err)
		if tps, _, terr := m.Tracepoints(); terr == nil {
			var names []string
			for _, t := range tps {
				names = append(names, t.System+":"+t.Name)
			}
			if n, ok := grammar.Closest(spec, names); ok {
				msg += "\nhint: did you mean " + n + "?"
			}
		}
		return nil, &notFound{msg}
	}
	stub := "__probestub_" + name
	_, proto, perr := m.FuncProto(stub)
	switch {
	case !m.HasProbeStub(name) || perr != nil:
		res.Notes = append(res.Notes, fmt.Sprintf("the model has no %s (Linux 6.10+): t events cannot type this tracepoint's arguments", stub))
		res.Signature = spec
	default:
		res.Signature = Signature(stub, proto)
		// The stub's first parameter is the tracepoint's private data,
		// which a t event does not count among its arguments.
		p := *proto
		if len(p.Params) > 0 && p.Params[0].Name == "__data" {
			p.Params = p.Params[1:]
		}
		res.Params = paramArgs(m, d, fetchargs.TProbe, stub, &p)
		if !d.Fprobe {
			res.Notes = append(res.Notes, fmt.Sprintf("t events need Linux 6.12; the model's kernel is %s: --syntax latest runs them through eBPF", d.Name))
		}
	}
	return res, nil
}

// Signature is the C prototype of function name.
func Signature(name string, proto *btf.FuncProto) string {
	var ps []string
	for _, p := range proto.Params {
		ps = append(ps, kernel.CDecl(p.Type, p.Name))
	}
	if len(ps) == 0 {
		ps = append(ps, "void")
	}
	return kernel.CDecl(proto.Return, name+"("+strings.Join(ps, ", ")+")")
}
