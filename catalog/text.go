package catalog

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/ktrace-dev/ktrace/kernel"
)

// WriteText writes r as `ktrace args` prints it: the signature, a table
// of the parameters and the return value, a table of a tracepoint's
// fields, and the notes.
func (r *Args) WriteText(out io.Writer) {
	fmt.Fprintln(out, r.Signature)
	if len(r.Params) > 0 || r.Return != nil {
		rows := [][]string{{"PARAM", "TYPE", "FETCH", "REG", "DEFAULT"}}
		row := func(a Arg) {
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
		writeTable(out, rows)
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
		writeTable(out, rows)
	}
	for _, n := range r.Notes {
		fmt.Fprintf(out, "# note: %s\n", n)
	}
}

// writeTable writes rows in columns two spaces apart.
func writeTable(out io.Writer, rows [][]string) {
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

// WriteFuncs writes fs as `ktrace funcs` lists them: one line each, in
// columns, or one JSON object each (JSON Lines, Func).
func WriteFuncs(out io.Writer, fs []kernel.FuncInfo, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(out)
		enc.SetEscapeHTML(false)
		for i := range fs {
			if err := enc.Encode(FuncOf(&fs[i])); err != nil {
				return err
			}
		}
		return nil
	}
	width := 0
	for i := range fs {
		if n := len(fs[i].Spec()); n > width && n <= 48 {
			width = n
		}
	}
	for i := range fs {
		writeFuncLine(out, &fs[i], width)
	}
	return nil
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
func writeFuncLine(out io.Writer, f *kernel.FuncInfo, width int) {
	fprobe, fwhy := f.Fprobe, f.FprobeWhy
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

// WriteTracepoints writes tps as `ktrace funcs -t` lists them: one line
// each, with whether a t event can attach and why not, or one JSON object
// each.
func WriteTracepoints(out io.Writer, tps []Tracepoint, asJSON bool) error {
	enc := json.NewEncoder(out)
	enc.SetEscapeHTML(false)
	for i := range tps {
		t := &tps[i]
		switch {
		case asJSON:
			if err := enc.Encode(t); err != nil {
				return err
			}
		case t.Tprobe:
			fmt.Fprintf(out, "%-48s  t\n", t.Spec())
		default:
			fmt.Fprintf(out, "%-48s  none  t: %s\n", t.Spec(), *t.Why)
		}
	}
	return nil
}
