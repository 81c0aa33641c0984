package catalog

import (
	"errors"
	"fmt"
	"io"
	"path"
	"strings"

	"github.com/ktrace-dev/ktrace/grammar"
	"github.com/ktrace-dev/ktrace/kernel"
)

// ErrBadGlob is wrapped by the errors for a malformed glob.
var ErrBadGlob = errors.New("bad glob")

// Func is one function of a listing in its JSON form.
type Func struct {
	Name        string  `json:"name"`
	Module      string  `json:"module"`
	Symbols     int     `json:"symbols"`
	Kprobe      bool    `json:"kprobe"`
	KprobeError *string `json:"kprobe_error"`
	KprobeWhy   *string `json:"kprobe_why"`
	Fprobe      bool    `json:"fprobe"`
	FprobeWhy   *string `json:"fprobe_why"`
}

// FuncOf is f's JSON form.
func FuncOf(f *kernel.FuncInfo) Func {
	j := Func{Name: f.Name, Module: f.Module, Symbols: f.Count, Kprobe: f.Kprobe,
		KprobeWhy: strp(f.KprobeWhy), Fprobe: f.Fprobe, FprobeWhy: strp(f.FprobeWhy)}
	if f.KprobeCode != grammar.ErrNone {
		j.KprobeError = strp(f.KprobeCode.Name())
	}
	return j
}

// strp returns a pointer to s, or nil for "".
func strp(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// NoKprobes says why the running kernel of m has no kprobes, or "" when
// it has them (or m is not a running kernel's model).
func NoKprobes(m *kernel.Model) string {
	if m.NumSymbols() == 0 || len(m.Symbols("", "register_kprobe")) > 0 {
		return ""
	}
	return "the running kernel has no kprobes (built without CONFIG_KPROBES: kallsyms has no register_kprobe)"
}

// Functions lists the functions of m matching globs ("MOD:GLOB" for a
// module; none: all), each with the verdicts the kernel of dialect d
// gives "p FUNC" and "f FUNC". Notes are what a reader should know about
// the whole listing (a module not loaded, a kernel without kprobes or
// fprobes). A malformed glob is an ErrBadGlob.
func Functions(m *kernel.Model, d *grammar.Dialect, globs []string) (fs []kernel.FuncInfo, notes []string, err error) {
	fs, err = m.Funcs(globs)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %w", ErrBadGlob, err)
	}
	for _, g := range globs {
		if mod, _, ok := strings.Cut(g, ":"); ok && !strings.ContainsAny(mod, "*?[\\") && !m.ModuleLoaded(mod) {
			notes = append(notes, fmt.Sprintf("module %s is not loaded in the model (kallsyms has none of its symbols)", mod))
		}
	}
	// A running kernel without kprobes has no kprobe_events at all.
	if noKp := hostNoKprobes(m); noKp != "" {
		notes = append(notes, noKp+": no p or r line can be added to it")
		noFp := ""
		if m.Config("CONFIG_FPROBE") != "y" {
			noFp = "the running kernel has no fprobes (built without CONFIG_FPROBE)"
		}
		for i := range fs {
			fs[i].Kprobe, fs[i].KprobeCode, fs[i].KprobeWhy = false, grammar.ErrNone, noKp
			if noFp != "" {
				fs[i].Fprobe, fs[i].FprobeWhy = false, noFp
			}
		}
	}
	if !d.Fprobe {
		notes = append(notes, fmt.Sprintf("hint: fprobe events (f lines) need Linux 6.12; the model's kernel is %s: --syntax latest runs them through eBPF", d.Name))
		for i := range fs {
			if fs[i].Fprobe {
				fs[i].Fprobe, fs[i].FprobeWhy = false, "fprobe events need Linux 6.12 (--syntax latest runs it through eBPF: ftrace can trace it)"
			}
		}
	}
	return fs, notes, nil
}

// hostNoKprobes is NoKprobes for the running kernel's model only.
func hostNoKprobes(m *kernel.Model) string {
	if m.Source() != "host" {
		return ""
	}
	return NoKprobes(m)
}

// Tracepoint is one tracepoint of a listing, with whether a t event can
// attach to it and why not, and whether the model has its format.
type Tracepoint struct {
	System string  `json:"system"`
	Name   string  `json:"name"`
	Tprobe bool    `json:"tprobe"`
	Why    *string `json:"tprobe_why"`
	Format bool    `json:"format"`
}

// Spec is "SYSTEM:EVENT", or the name alone when the system is unknown.
func (t *Tracepoint) Spec() string {
	if t.System == "" {
		return t.Name
	}
	return t.System + ":" + t.Name
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
				return nil, fmt.Errorf("%w %q: %w", ErrBadGlob, g, err)
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

// Tracepoints lists the tracepoints of m matching SYSTEM:EVENT (or EVENT)
// globs, from the model's formats; a model without formats lists the
// tracepoints kallsyms names, without systems, and says so in notes.
func Tracepoints(m *kernel.Model, d *grammar.Dialect, globs []string) (out []Tracepoint, notes []string, err error) {
	pats, err := parseTPGlobs(globs)
	if err != nil {
		return nil, nil, err
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
	add := func(sys, name string, format bool) {
		t := Tracepoint{System: sys, Name: name, Tprobe: true, Format: format}
		switch {
		case !m.HasTracepoint(name):
			t.Tprobe, t.Why = false, strp("kallsyms has no __tracepoint_"+name)
		case !d.Fprobe:
			t.Tprobe, t.Why = false, strp("t events need Linux 6.12 (--syntax latest runs them through eBPF)")
		}
		out = append(out, t)
	}
	tps, _, err := m.Tracepoints()
	if err == nil {
		for _, t := range tps {
			if match(t.System, t.Name) {
				add(t.System, t.Name, true)
			}
		}
		return out, nil, nil
	}
	// kallsyms names the tracepoints but not their systems.
	notes = append(notes, fmt.Sprintf("%v: listing the tracepoints kallsyms names (__tracepoint_NAME), without their systems or fields; a snapshot DIR has them in tracepoints/ (available_events and events/SYSTEM/EVENT/format, copied from tracefs; kernel capture does not write them)", err))
	for _, p := range pats {
		if p.hasSys && p.sys != "*" {
			return nil, notes, &notFound{fmt.Sprintf("funcs -t %s:%s: the model does not know which system a tracepoint belongs to; give an EVENT glob instead", p.sys, p.name)}
		}
	}
	for _, name := range m.TracepointNames() {
		if match("", name) {
			add("", name, false)
		}
	}
	return out, notes, nil
}

// FindTracepoint looks up "SYSTEM:EVENT" (or a bare EVENT unique across
// systems) in the model's formats.
func FindTracepoint(m *kernel.Model, spec string) (*kernel.Tracepoint, error) {
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
		return nil, &notFound{fmt.Sprintf("no tracepoint %s in the model", spec)}
	}
	return nil, &notFound{fmt.Sprintf("tracepoint name %s is in several systems: give SYSTEM:%s", name, name)}
}

// List writes `ktrace funcs` (tracepoints: `ktrace funcs -t`): the
// functions (tracepoints) of m matching globs on out, as text or JSON
// Lines, and the listing's notes on notes, a line each ("ktrace: " before
// all but hints). A malformed glob is an ErrBadGlob; globs that match
// nothing are an ErrNotFound naming them, after the (empty) listing.
func List(out, notes io.Writer, m *kernel.Model, d *grammar.Dialect, globs []string, tracepoints, asJSON bool) error {
	if tracepoints {
		tps, ns, err := Tracepoints(m, d, globs)
		if errors.Is(err, ErrBadGlob) {
			err = fmt.Errorf("funcs -t: %w", err)
		}
		return writeListing(notes, "tracepoint", globs, tps, ns, err, func() error { return WriteTracepoints(out, tps, asJSON) })
	}
	fs, ns, err := Functions(m, d, globs)
	return writeListing(notes, "function", globs, fs, ns, err, func() error { return WriteFuncs(out, fs, asJSON) })
}

// writeListing prints the notes, then (unless finding the items failed
// with err) the items of a listing with write.
func writeListing[T any](notes io.Writer, what string, globs []string, items []T, ns []string, err error, write func() error) error {
	for _, n := range ns {
		if !strings.HasPrefix(n, "hint: ") {
			n = "ktrace: " + n
		}
		fmt.Fprintln(notes, n)
	}
	if err != nil {
		return err
	}
	if err := write(); err != nil {
		return fmt.Errorf("encode: %w", err)
	}
	if len(items) == 0 && len(globs) > 0 {
		return &notFound{fmt.Sprintf("no %s of the model matches %s", what, quoteAll(globs))}
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
