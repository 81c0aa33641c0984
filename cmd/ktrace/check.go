package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"

	"github.com/ktrace-dev/ktrace/events"
	"github.com/ktrace-dev/ktrace/grammar"
	"github.com/ktrace-dev/ktrace/tracefs"
	"github.com/spf13/cobra"
)

// checkResult is the JSON object `ktrace check --output json` prints per
// line.
type checkResult struct {
	Line     string            `json:"line"`
	File     string            `json:"file"`
	OK       bool              `json:"ok"`
	Errno    *string           `json:"errno"`
	Error    *events.LogEntry  `json:"error"`
	Readback []string          `json:"readback"`
	Formats  map[string]string `json:"formats"`
	Notes    []string          `json:"notes"`
	// Hints explain a rejection from the kernel model (see hints.go);
	// empty for accepted lines.
	Hints []string `json:"hints"`
	// Source is FILE:LINE for a line read with -f, null for an argument.
	Source *string `json:"source"`

	errno syscall.Errno
}

func newCheckCmd(g *globals) *cobra.Command {
	var fromFile, file string
	var sequence, errorsOnly, formats bool
	cmd := &cobra.Command{
		Use:   "check [LINE...] [-f FILE]",
		Short: "Check probe definition lines against an empty tracefs (each its own, or one in sequence)",
		Long: `check writes each LINE (or each line of FILE, '-' for stdin; blank and
comment-only lines skipped) to an empty emulated tracefs of the kernel model,
as 'echo LINE >> kprobe_events' would: lines starting with p, r or - go to
kprobe_events, others to dynamic_events (override with --file). Each line
gets a fresh tracefs; with --sequence all lines go to one tracefs in order,
as a file of writes would, so a line sees the events earlier lines made
(a duplicate is EEXIST, '-:EV' removes).

Text output: the readback line(s) of an accepted line; for a rejected one
the error_log entry (message, command, caret), then on stderr "hint:"
lines where the model can say more (the nearest symbol, type, register,
variable, parameter or member; why registration failed; the kernel
release a syntax needs). Lines from -f carry a "FILE:LINE: " prefix on
every output line. --errors-only prints rejected lines only.

JSON output: one object per line with line, source (FILE:LINE for -f
lines), file, ok, errno, error, readback, formats, notes and hints.
formats is filled only with --formats, and with --sequence holds each
event once, on the line that created it.
Exits 1 if any line is rejected. Put -- before lines that start with '-'
(removals), or they are taken for flags.`,
		Example: `  ktrace check 'p:myev do_sys_openat2 $arg1'
  ktrace check 'p:bad vfs_read +0(%di'
  ktrace --kernel ../shared/kernels/6.1 check -f probes.txt --output json
  ktrace check --sequence -f setup.txt --errors-only
  echo 'f:ev vfs_read%return $retval' | ktrace check -f -
  ktrace check -- '-:myev'`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if fromFile == "" && len(args) == 0 {
				return &exitError{code: exitUsage, err: fmt.Errorf("check needs LINE arguments or -f FILE (see 'ktrace check --help')")}
			}
			var forced *tracefs.ControlFile
			if file != "" {
				f, ok := parseFile(file)
				if !ok {
					return &exitError{code: exitUsage, err: fmt.Errorf("--file must be kprobe_events or dynamic_events, not %q", file)}
				}
				forced = &f
			}
			lines := make([]srcLine, 0, len(args))
			for _, a := range args {
				lines = append(lines, srcLine{text: a})
			}
			if fromFile != "" {
				more, err := readSrcLines(cmd.InOrStdin(), fromFile)
				if err != nil {
					return failf(exitRejected, "%w", err)
				}
				lines = append(lines, more...)
			}
			e, err := g.loadEnv("kernel")
			if err != nil {
				return err
			}
			out := bufio.NewWriter(cmd.OutOrStdout())
			defer out.Flush()
			stderr := cmd.ErrOrStderr()
			var w *world
			shown := map[string]string{} // GROUP/EVENT -> format given
			if sequence {
				w = e.newWorld()
			}
			enc := json.NewEncoder(out)
			// No HTML escaping, so "->" in print formats stays readable.
			enc.SetEscapeHTML(false)
			bad := false
			for _, sl := range lines {
				f := defaultFile(sl.text)
				if forced != nil {
					f = *forced
				}
				var r checkResult
				if sequence {
					r = e.checkIn(w, sl.text, f)
				} else {
					r = e.check(sl.text, f)
				}
				if sl.file != "" {
					src := fmt.Sprintf("%s:%d", sl.file, sl.no)
					r.Source = &src
				}
				// Formats only on request, each event once per run when
				// the events live on from line to line.
				if !formats {
					r.Formats = map[string]string{}
				} else if sequence {
					for k, v := range r.Formats {
						if shown[k] == v {
							delete(r.Formats, k)
							continue
						}
						shown[k] = v
					}
				}
				if !r.OK {
					bad = true
				} else if errorsOnly {
					continue
				}
				if g.output == "json" {
					if err := enc.Encode(r); err != nil {
						return failf(exitRejected, "encode result: %w", err)
					}
					continue
				}
				prefix := ""
				if r.Source != nil {
					prefix = *r.Source + ": "
				}
				printCheckText(prefixWriter{out, prefix}, r)
				// Hints follow the entry they explain.
				if len(r.Hints) > 0 {
					out.Flush()
					for _, h := range r.Hints {
						fmt.Fprintf(stderr, "%shint: %s\n", prefix, h)
					}
				}
			}
			if bad {
				return rejected
			}
			return nil
		},
	}
	cmd.Args = usageArgs(cobra.ArbitraryArgs)
	cmd.Flags().StringVarP(&fromFile, "from-file", "f", "", "read lines from `FILE` ('-' for stdin)")
	cmd.Flags().StringVar(&file, "file", "", "control file to write: kprobe_events or dynamic_events (default by the line's first byte)")
	cmd.Flags().BoolVar(&sequence, "sequence", false, "write all lines to one tracefs, in order")
	cmd.Flags().BoolVar(&errorsOnly, "errors-only", false, "print rejected lines only")
	cmd.Flags().BoolVar(&formats, "formats", false, "JSON: fill formats with the events' format files")
	return cmd
}

// srcLine is a line to check and where it came from (file "" for a
// command-line argument).
type srcLine struct {
	text string
	file string
	no   int
}

// prefixWriter puts prefix before every line written through it (its
// writes are whole lines).
type prefixWriter struct {
	w      io.Writer
	prefix string
}

func (p prefixWriter) Write(b []byte) (int, error) {
	if p.prefix == "" {
		return p.w.Write(b)
	}
	s := string(b)
	var out strings.Builder
	for s != "" {
		line, rest, _ := strings.Cut(s, "\n")
		out.WriteString(p.prefix + line + "\n")
		s = rest
	}
	if _, err := io.WriteString(p.w, out.String()); err != nil {
		return 0, err
	}
	return len(b), nil
}

// readLines reads the lines to check from name ("-" = stdin), skipping
// blank and comment-only ones.
func readLines(stdin io.Reader, name string) ([]string, error) {
	sl, err := readSrcLines(stdin, name)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(sl))
	for i, l := range sl {
		out[i] = l.text
	}
	return out, nil
}

// readSrcLines is readLines with each line's file and number; stdin is
// named "<stdin>".
func readSrcLines(stdin io.Reader, name string) ([]srcLine, error) {
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
	var lines []srcLine
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for n := 1; sc.Scan(); n++ {
		l := sc.Text()
		t := strings.TrimSpace(l)
		if t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		lines = append(lines, srcLine{text: l, file: label, no: n})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read lines from %s: %w", name, err)
	}
	return lines, nil
}

// check runs one line against a fresh tracefs.
func (e *env) check(line string, f tracefs.ControlFile) checkResult {
	return e.checkIn(e.newWorld(), line, f)
}

// checkIn runs one line against the tracefs of w, as the next write.
func (e *env) checkIn(w *world, line string, f tracefs.ControlFile) checkResult {
	res := w.writeLine(f, line)
	r := checkResult{
		Line:     line,
		File:     f.String(),
		OK:       res.errno == 0,
		Readback: splitLines(w.reg.Readback(f)),
		Formats:  map[string]string{},
		Notes:    []string{},
		Hints:    []string{},
	}
	if !r.OK {
		r.errno = res.errno
		name := grammar.ErrnoName(res.errno)
		r.Errno = &name
		if n := len(res.logs); n > 0 {
			l := res.logs[n-1]
			r.Error = &l
		}
	}
	for _, ev := range w.reg.Events() {
		r.Formats[ev.Group+"/"+ev.Name] = ev.Format()
		r.Notes = append(r.Notes, e.notes(ev)...)
	}
	if h := e.hintsOf(&r, f); len(h) > 0 {
		r.Hints = h
	}
	return r
}

// notes lists the checks the model could not make for an accepted event.
func (e *env) notes(ev *events.Event) []string {
	var out []string
	for _, p := range ev.Probes {
		if (ev.Kind == events.Kprobe || ev.Kind == events.Kretprobe) && p.Offset != 0 && p.Addr != 0 {
			if _, checked := e.model.InsnBoundary(p.Addr); !checked {
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

func printCheckText(out io.Writer, r checkResult) {
	if r.OK {
		for _, l := range r.Readback {
			fmt.Fprintln(out, l)
		}
		for _, n := range r.Notes {
			fmt.Fprintf(out, "# note: %s\n", n)
		}
		return
	}
	if r.Error != nil {
		fmt.Fprint(out, tracefs.FormatLogEntry(*r.Error))
		return
	}
	fmt.Fprintf(out, "%s: write error: %s (%s; the kernel logs nothing for this line)\n  Command: %s\n", r.File, grammar.Strerror(r.errno), *r.Errno, r.Line)
}
