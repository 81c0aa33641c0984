package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"path"
	"runtime/debug"
	"strings"

	"github.com/ktrace-dev/ktrace/grammar"
	"github.com/ktrace-dev/ktrace/kernel"
	"github.com/spf13/cobra"
)

// funcJSON is one line of `ktrace funcs --output json`.
type funcJSON struct {
	Name        string  `json:"name"`
	Module      string  `json:"module"`
	Symbols     int     `json:"symbols"`
	Kprobe      bool    `json:"kprobe"`
	KprobeError *string `json:"kprobe_error"`
	KprobeWhy   *string `json:"kprobe_why"`
	Fprobe      bool    `json:"fprobe"`
	FprobeWhy   *string `json:"fprobe_why"`
}

// tracepointJSON is one line of `ktrace funcs -t --output json`.
type tracepointJSON struct {
	System string  `json:"system"`
	Name   string  `json:"name"`
	Tprobe bool    `json:"tprobe"`
	Why    *string `json:"tprobe_why"`
	Format bool    `json:"format"`
}

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

// strp returns a pointer to s, or nil for "".
func strp(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func listFuncs(e *env, asJSON bool, globs []string, out io.Writer, stderr io.Writer) error {
	fs, err := e.model.Funcs(globs)
	if err != nil {
		return &exitError{code: exitUsage, err: err}
	}
	for _, g := range globs {
		if mod, _, ok := strings.Cut(g, ":"); ok && !strings.ContainsAny(mod, "*?[\\") && !e.model.ModuleLoaded(mod) {
			fmt.Fprintf(stderr, "ktrace: module %s is not loaded in the model (kallsyms has none of its symbols)\n", mod)
		}
	}
	// A running kernel without kprobes has no kprobe_events at all.
	noKp := ""
	if e.model.Source() == "host" {
		noKp = noKprobes(e.model)
	}
	if noKp != "" {
		fmt.Fprintf(stderr, "ktrace: %s: no p or r line can be added to it\n", noKp)
		noFp := ""
		if e.model.Config("CONFIG_FPROBE") != "y" {
			noFp = "the running kernel has no fprobes (built without CONFIG_FPROBE)"
		}
		for i := range fs {
			fs[i].Kprobe, fs[i].KprobeCode, fs[i].KprobeWhy = false, grammar.ErrNone, noKp
			if noFp != "" {
				fs[i].Fprobe, fs[i].FprobeWhy = false, noFp
			}
		}
	}
	noFprobe := !e.dialect.Fprobe
	if noFprobe {
		fmt.Fprintf(stderr, "hint: fprobe events (f lines) need Linux 6.12; the model's kernel is %s: --syntax latest runs them through eBPF\n", e.dialect.Name)
	}
	width := 0
	for i := range fs {
		if n := len(fs[i].Spec()); n > width && n <= 48 {
			width = n
		}
	}
	enc := json.NewEncoder(out)
	enc.SetEscapeHTML(false)
	for i := range fs {
		f := &fs[i]
		fprobe, fwhy := f.Fprobe, f.FprobeWhy
		if noFprobe && fprobe {
			fprobe, fwhy = false, "fprobe events need Linux 6.12 (--syntax latest runs it through eBPF: ftrace can trace it)"
		}
		if asJSON {
			j := funcJSON{Name: f.Name, Module: f.Module, Symbols: f.Count, Kprobe: f.Kprobe,
				KprobeWhy: strp(f.KprobeWhy), Fprobe: fprobe, FprobeWhy: strp(fwhy)}
			if f.KprobeCode != grammar.ErrNone {
				j.KprobeError = strp(f.KprobeCode.Name())
			}
			if err := enc.Encode(j); err != nil {
				return failf(exitRejected, "encode: %w", err)
			}
			continue
		}
		writeFuncLine(out, f, width, fprobe, fwhy)
	}
	if len(fs) == 0 && len(globs) > 0 {
		fmt.Fprintf(stderr, "ktrace: no function of the model matches %s\n", strings.Join(quoteAll(globs), " "))
		return rejected
	}
	return nil
}

func quoteAll(s []string) []string {
	out := make([]string, len(s))
	for i, x := range s {
		out[i] = "'" + x + "'"
	}
	return out
}

// tpGlob is a SYSTEM:EVENT glob; a glob without ':' matches the event
// name in any system.
type tpGlob struct {
	sys, name string
	hasSys    bool
}

func parseTPGlobs(globs []string) ([]tpGlob, error) {
	var out []tpGlob
	for _, g := range globs {
		t := tpGlob{name: g}
		if s, n, ok := strings.Cut(g, ":"); ok {
			t = tpGlob{sys: s, name: n, hasSys: true}
		}
		for _, p := range []string{t.sys, t.name} {
			if _, err := path.Match(p, ""); err != nil {
				return nil, fmt.Errorf("funcs -t: bad glob %q: %w", g, err)
			}
		}
		out = append(out, t)
	}
	return out, nil
}

func (t tpGlob) match(sys, name string) bool {
	if t.hasSys {
		if ok, _ := path.Match(t.sys, sys); !ok {
			return false
		}
	}
	ok, _ := path.Match(t.name, name)
	return ok
}

// tprobeVerdict says whether a t event can attach to tracepoint name on
// the model, and why not.
func tprobeVerdict(e *env, name string) (bool, string) {
	if !e.model.HasTracepoint(name) {
		return false, "kallsyms has no __tracepoint_" + name
	}
	if !e.dialect.Fprobe {
		return false, "t events need Linux 6.12 (--syntax latest runs them through eBPF)"
	}
	return true, ""
}

func listTracepoints(e *env, asJSON bool, globs []string, out io.Writer, stderr io.Writer) error {
	pats, err := parseTPGlobs(globs)
	if err != nil {
		return &exitError{code: exitUsage, err: err}
	}
	match := func(sys, name string) bool {
		if len(pats) == 0 {
			return true
		}
		for _, p := range pats {
			if p.match(sys, name) {
				return true
			}
		}
		return false
	}
	enc := json.NewEncoder(out)
	enc.SetEscapeHTML(false)
	emit := func(sys, name string, format bool) error {
		ok, why := tprobeVerdict(e, name)
		if asJSON {
			return enc.Encode(tracepointJSON{System: sys, Name: name, Tprobe: ok, Why: strp(why), Format: format})
		}
		spec := sys + ":" + name
		if sys == "" {
			spec = name
		}
		if ok {
			fmt.Fprintf(out, "%-48s  t\n", spec)
		} else {
			fmt.Fprintf(out, "%-48s  none  t: %s\n", spec, why)
		}
		return nil
	}
	n := 0
	tps, _, err := e.model.Tracepoints()
	if err != nil {
		// kallsyms names the tracepoints but not their systems.
		fmt.Fprintf(stderr, "ktrace: %v: listing the tracepoints kallsyms names (__tracepoint_NAME), without their systems or fields; a snapshot DIR has them in tracepoints/ (available_events and events/SYSTEM/EVENT/format, copied from tracefs; kernel capture does not write them)\n", err)
		for _, p := range pats {
			if p.hasSys && p.sys != "*" {
				return failf(exitRejected, "funcs -t %s:%s: the model does not know which system a tracepoint belongs to; give an EVENT glob instead", p.sys, p.name)
			}
		}
		for _, name := range e.model.TracepointNames() {
			if !match("", name) {
				continue
			}
			n++
			if err := emit("", name, false); err != nil {
				return failf(exitRejected, "encode: %w", err)
			}
		}
	} else {
		for _, t := range tps {
			if !match(t.System, t.Name) {
				continue
			}
			n++
			if err := emit(t.System, t.Name, true); err != nil {
				return failf(exitRejected, "encode: %w", err)
			}
		}
	}
	if n == 0 && len(globs) > 0 {
		fmt.Fprintf(stderr, "ktrace: no tracepoint of the model matches %s\n", strings.Join(quoteAll(globs), " "))
		return rejected
	}
	return nil
}

// findTracepoint looks up "SYSTEM:EVENT" (or a bare EVENT unique across
// systems) in the model's formats.
func findTracepoint(m *kernel.Model, spec string) (*kernel.Tracepoint, error) {
	tps, _, err := m.Tracepoints()
	if err != nil {
		return nil, err
	}
	sys, name, hasSys := strings.Cut(spec, ":")
	if !hasSys {
		name, sys = spec, ""
	}
	var found []*kernel.Tracepoint
	for i := range tps {
		if tps[i].Name == name && (!hasSys || tps[i].System == sys) {
			found = append(found, &tps[i])
		}
	}
	switch len(found) {
	case 1:
		return found[0], nil
	case 0:
		return nil, fmt.Errorf("no tracepoint %s in the model", spec)
	}
	return nil, fmt.Errorf("tracepoint name %s is in several systems: give SYSTEM:%s", name, name)
}

// spaces pads the text columns.
var spaces = strings.Repeat(" ", 64)

// pad writes s and then spaces up to width.
func pad(out io.Writer, s string, width int) {
	io.WriteString(out, s)
	for n := width - len(s); n > 0; {
		k := min(n, len(spaces))
		io.WriteString(out, spaces[:k])
		n -= k
	}
}

// writeFuncLine writes one line of `ktrace funcs`: the function, how it
// can be probed, and why not for each kind the kernel refuses.
func writeFuncLine(out io.Writer, f *kernel.FuncInfo, width int, fprobe bool, fwhy string) {
	pad(out, f.Spec(), width)
	io.WriteString(out, "  ")
	how := "none"
	switch {
	case f.Kprobe && fprobe:
		how = "kprobe fprobe"
	case f.Kprobe:
		how = "kprobe"
	case fprobe:
		how = "fprobe"
	}
	sep := "  "
	if f.Kprobe && fprobe {
		io.WriteString(out, how)
		io.WriteString(out, "\n")
		return
	}
	pad(out, how, 13)
	if !f.Kprobe && f.KprobeWhy != "" {
		io.WriteString(out, sep+"kprobe: "+f.KprobeWhy)
		sep = "; "
	}
	if !fprobe && fwhy != "" {
		io.WriteString(out, sep+"fprobe: "+fwhy)
	}
	io.WriteString(out, "\n")
}
