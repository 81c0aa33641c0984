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
	Error    *jsonLogEntry     `json:"error"`
	Readback []string          `json:"readback"`
	Formats  map[string]string `json:"formats"`
	Notes    []string          `json:"notes"`

	errno syscall.Errno
}

// jsonLogEntry is an error_log entry in JSON.
type jsonLogEntry struct {
	Subsys string `json:"subsys"`
	Msg    string `json:"msg"`
	Cmd    string `json:"cmd"`
	Pos    int    `json:"pos"`
}

func newCheckCmd(g *globals) *cobra.Command {
	var fromFile, file string
	cmd := &cobra.Command{
		Use:   "check [LINE...] [-f FILE]",
		Short: "Check probe definition lines, each against a fresh empty tracefs",
		Long: `check writes each LINE (or each line of FILE, '-' for stdin; blank and
comment-only lines skipped) to an empty emulated tracefs of the kernel model,
as 'echo LINE >> kprobe_events' would: lines starting with p, r or - go to
kprobe_events, others to dynamic_events (override with --file).

Text output: the readback line(s) of an accepted line; for a rejected one
the error_log entry (message, command, caret). JSON output: one object per
line with line, file, ok, errno, error, readback, formats and notes.
Exits 1 if any line is rejected. Put -- before lines that start with '-'
(removals), or they are taken for flags.`,
		Example: `  ktrace check 'p:myev do_sys_openat2 $arg1'
  ktrace check 'p:bad vfs_read +0(%di'
  ktrace --kernel ../shared/kernels/6.1 check -f probes.txt --output json
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
			lines := append([]string(nil), args...)
			if fromFile != "" {
				more, err := readLines(cmd.InOrStdin(), fromFile)
				if err != nil {
					return failf(exitRejected, "%w", err)
				}
				lines = append(lines, more...)
			}
			e, err := g.loadEnv("kernel")
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			bad := false
			for _, line := range lines {
				f := defaultFile(line)
				if forced != nil {
					f = *forced
				}
				r := e.check(line, f)
				if !r.OK {
					bad = true
				}
				if g.output == "json" {
					// One object per line; no HTML escaping, so "->" in
					// print formats stays readable.
					enc := json.NewEncoder(out)
					enc.SetEscapeHTML(false)
					if err := enc.Encode(r); err != nil {
						return failf(exitRejected, "encode result: %w", err)
					}
					continue
				}
				printCheckText(out, r)
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
	return cmd
}

// readLines reads the lines to check from name ("-" = stdin), skipping
// blank and comment-only ones.
func readLines(stdin io.Reader, name string) ([]string, error) {
	var r io.Reader = stdin
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return nil, fmt.Errorf("read lines: %w", err)
		}
		defer f.Close()
		r = f
	}
	var lines []string
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		l := sc.Text()
		t := strings.TrimSpace(l)
		if t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		lines = append(lines, l)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read lines from %s: %w", name, err)
	}
	return lines, nil
}

// check runs one line against a fresh tracefs.
func (e *env) check(line string, f tracefs.ControlFile) checkResult {
	w := e.newWorld()
	res := w.writeLine(f, line)
	r := checkResult{
		Line:     line,
		File:     f.String(),
		OK:       res.errno == 0,
		Readback: splitLines(w.reg.Readback(eventsFile(f))),
		Formats:  map[string]string{},
		Notes:    []string{},
	}
	if !r.OK {
		r.errno = res.errno
		name := errnoName(res.errno)
		r.Errno = &name
		if n := len(res.logs); n > 0 {
			l := res.logs[n-1]
			r.Error = &jsonLogEntry{Subsys: l.Subsys, Msg: l.Msg, Cmd: l.Cmd, Pos: l.Pos}
		}
	}
	for _, ev := range w.reg.Events() {
		r.Formats[ev.Group+"/"+ev.Name] = ev.Format()
		r.Notes = append(r.Notes, e.notes(ev)...)
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

func eventsFile(f tracefs.ControlFile) events.File {
	if f == tracefs.KprobeEvents {
		return events.KprobeEvents
	}
	return events.DynamicEvents
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
		fmt.Fprint(out, tracefs.FormatLogEntry(tracefs.LogEntry{Subsys: r.Error.Subsys, Msg: r.Error.Msg, Cmd: r.Error.Cmd, Pos: r.Error.Pos}))
		return
	}
	fmt.Fprintf(out, "%s: write error: %s (%s; the kernel logs nothing for this line)\n  Command: %s\n", r.File, strerror(r.errno), *r.Errno, r.Line)
}
