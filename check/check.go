package check

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"

	"github.com/ktrace-dev/ktrace/events"
	"github.com/ktrace-dev/ktrace/grammar"
	"github.com/ktrace-dev/ktrace/hints"
	"github.com/ktrace-dev/ktrace/kernel"
	"github.com/ktrace-dev/ktrace/tracefs"
)

// Result is the outcome of one line, in the JSON form `ktrace check
// --output json` prints.
type Result struct {
	Line     string            `json:"line"`
	File     string            `json:"file"`
	OK       bool              `json:"ok"`
	Errno    *string           `json:"errno"`
	Error    *events.LogEntry  `json:"error"`
	Readback []string          `json:"readback"`
	Formats  map[string]string `json:"formats"`
	Notes    []string          `json:"notes"`
	// Hints explain a rejection from the kernel model; empty for
	// accepted lines.
	Hints []string `json:"hints"`
	// Source is FILE:LINE for a line read from a file, null otherwise.
	Source *string `json:"source"`

	errno syscall.Errno
}

// Checker checks lines against the kernel of one model and dialect.
type Checker struct {
	model  *kernel.Model
	hinter *hints.Hinter
	// reg is the registry lines go to in sequence; nil: a fresh one for
	// every line.
	reg     *events.Registry
	dialect *grammar.Dialect
}

// New returns a checker; with sequence set every line goes to one
// tracefs, in order, and sees the events earlier lines made.
func New(m *kernel.Model, d *grammar.Dialect, sequence bool) *Checker {
	c := &Checker{model: m, dialect: d, hinter: &hints.Hinter{Model: m, Dialect: d}}
	if sequence {
		c.reg = events.NewRegistry(m, d)
	}
	return c
}

// DefaultFile is the control file a line goes to when none is given:
// p and r lines whose place is a path ("/bin/bash:0x4f0", any place with
// a '/') to uprobe_events, the other p and r lines (and removals) to
// kprobe_events, everything else to dynamic_events.
func DefaultFile(line string) events.File {
	if line == "" || (line[0] != 'p' && line[0] != 'r' && line[0] != '-') {
		return events.DynamicEvents
	}
	if f := strings.Fields(line); line[0] != '-' && len(f) > 1 && strings.Contains(f[1], "/") {
		return events.UprobeEvents
	}
	return events.KprobeEvents
}

// Check writes line to control file f as one write(2) of the line and a
// newline.
func (c *Checker) Check(line string, f events.File) Result {
	reg := c.reg
	if reg == nil {
		reg = events.NewRegistry(c.model, c.dialect)
	}
	_, err := reg.Define(f, line)
	r := Result{
		Line:     line,
		File:     f.String(),
		OK:       err == nil,
		Readback: splitLines(reg.Readback(f)),
		Formats:  map[string]string{},
		Notes:    []string{},
		Hints:    []string{},
	}
	if err != nil {
		r.errno = grammar.ErrnoOf(err)
		name := grammar.ErrnoName(r.errno)
		r.Errno = &name
		var we *events.WriteError
		if errors.As(err, &we) && we.Last() != nil {
			l := *we.Last()
			r.Error = &l
		}
		if h := c.hinter.For(line, f, r.Error); len(h) > 0 {
			r.Hints = h
		}
	}
	for _, ev := range reg.Events() {
		r.Formats[ev.Group+"/"+ev.Name] = ev.Format()
		r.Notes = append(r.Notes, c.notes(ev)...)
	}
	return r
}

// notes lists the checks the model could not make for an accepted event.
func (c *Checker) notes(ev *events.Event) []string {
	var out []string
	for _, p := range ev.Probes {
		if (ev.Kind == events.Kprobe || ev.Kind == events.Kretprobe) && p.Offset != 0 && p.Addr != 0 {
			if _, checked := c.model.InsnBoundary(p.Addr); !checked {
				out = append(out, fmt.Sprintf("%s+%d: instruction-boundary check skipped: the kernel model has no decodable kernel image", p.Symbol, p.Offset))
			}
		}
		if p.Pending {
			out = append(out, fmt.Sprintf("%s: probe accepted but not armed (module not loaded or target unknown to the model)", p.Line))
		}
	}
	return out
}

func splitLines(s string) []string {
	s = strings.TrimSuffix(s, "\n")
	if s == "" {
		return []string{}
	}
	return strings.Split(s, "\n")
}

// WriteText writes r as `ktrace check` prints it: the readback and notes
// of an accepted line, the error_log entry of a rejected one (or the
// write error when the kernel logs nothing). Every output line starts
// with prefix.
func (r *Result) WriteText(w io.Writer, prefix string) {
	line := func(s string) { io.WriteString(w, prefix+s+"\n") }
	if r.OK {
		for _, l := range r.Readback {
			line(l)
		}
		for _, n := range r.Notes {
			line("# note: " + n)
		}
		return
	}
	if r.Error != nil {
		for _, l := range strings.Split(strings.TrimSuffix(tracefs.FormatLogEntry(*r.Error), "\n"), "\n") {
			line(l)
		}
		return
	}
	line(fmt.Sprintf("%s: write error: %s (%s; the kernel logs nothing for this line)", r.File, grammar.Strerror(r.errno), *r.Errno))
	line("  Command: " + r.Line)
}

// Line is a line read from a file, with its file and number.
type Line struct {
	Text string
	File string // "" for a command-line argument
	No   int
}

// ReadLines reads lines from name ("-" = stdin, named "<stdin>"),
// skipping blank and comment-only ones.
func ReadLines(stdin io.Reader, name string) ([]Line, error) {
	var r io.Reader = stdin
	label := "<stdin>"
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return nil, fmt.Errorf("read lines: %w", err)
		}
		defer f.Close()
		r, label = f, name
	}
	var lines []Line
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for n := 1; sc.Scan(); n++ {
		l := sc.Text()
		t := strings.TrimSpace(l)
		if t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		lines = append(lines, Line{Text: l, File: label, No: n})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read lines from %s: %w", name, err)
	}
	return lines, nil
}

// Texts is the lines' texts.
func Texts(lines []Line) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = l.Text
	}
	return out
}
