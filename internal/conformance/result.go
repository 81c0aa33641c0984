package conformance

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/ktrace-dev/ktrace/events"
)

// LogEntry is one error_log entry: the subsystem, the message, the
// command as the kernel re-joined it, and the caret column within it
// (events.LogEntry, whose JSON names the goldens use).
type LogEntry = events.LogEntry

// Result is the outcome of one case: one line of a golden file.
type Result struct {
	Corpus      string            `json:"corpus"`
	Index       int               `json:"index"`
	Line        string            `json:"line"`
	Setup       []string          `json:"setup"`
	File        string            `json:"file"`
	Enable      []string          `json:"enable,omitempty"`        // events enabled after setup, as in the corpus
	SetupErrnos []string          `json:"setup_errnos"`            // per setup line, "" on success
	EnableErrs  []string          `json:"enable_errnos,omitempty"` // per enabled event, only when one failed
	OK          bool              `json:"ok"`
	Errno       string            `json:"errno"` // symbolic ("EINVAL"), "" on success
	Error       *LogEntry         `json:"error"` // the error_log entry the write added, nil if none
	Readback    []string          `json:"readback"`
	Hist        []string          `json:"hist,omitempty"`            // a trigger case's events/GRP/EV/hist after the write
	Formats     map[string]string `json:"formats"`                   // "GRP/EV" -> format file text
	Problems    []string          `json:"runner_problems,omitempty"` // runner-side failures (unreadable files...)
}

// Key names the result's case as "corpus:index".
func (r *Result) Key() string { return fmt.Sprintf("%s:%d", r.Corpus, r.Index) }

// MarshalLine encodes r as one JSON line, HTML characters unescaped so that
// format strings like "(%lx <- %lx)" stay readable.
func (r *Result) MarshalLine() ([]byte, error) {
	b, err := jsonLine(r)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", r.Key(), err)
	}
	return b, nil
}

// ParseResults decodes a stream of Result lines (a golden file or the guest
// runner's output). Blank lines and lines not starting with '{' are skipped
// (the guest's serial port may carry stray text).
func ParseResults(b []byte) ([]Result, error) {
	var out []Result
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 16<<20)
	for n := 1; sc.Scan(); n++ {
		text := bytes.TrimSpace(sc.Bytes())
		if len(text) == 0 || text[0] != '{' {
			continue
		}
		var r Result
		if err := json.Unmarshal(text, &r); err != nil {
			return nil, fmt.Errorf("conformance: result line %d: %w", n, err)
		}
		out = append(out, r)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("conformance: results: %w", err)
	}
	return out, nil
}

// ReadGolden reads a golden file.
func ReadGolden(path string) ([]Result, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("conformance: %w", err)
	}
	return ParseResults(b)
}

// WriteGolden writes results as a golden file, one JSON object per line.
func WriteGolden(path string, rs []Result) error {
	var buf bytes.Buffer
	for i := range rs {
		b, err := rs[i].MarshalLine()
		if err != nil {
			return err
		}
		buf.Write(b)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("conformance: %w", err)
	}
	return nil
}

// Diff is one disagreement in one field of one case.
type Diff struct {
	Field     string // ok, errno, subsys, msg, cmd, pos, error, readback, formats[GRP/EV], setup_errnos
	Want, Got string // Linux's value, ktrace's (or the other run's) value
}

// stripID drops the "ID: N" line of a format file: event IDs depend on
// how many events the kernel registered before, not on the probe.
func stripID(s string) string {
	lines := strings.Split(s, "\n")
	out := lines[:0]
	for _, l := range lines {
		if !strings.HasPrefix(l, "ID: ") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// Compare lists the field-by-field differences between want (Linux) and
// got (ktrace, or a fresh VM run), format files compared without their
// ID line. Both must describe the same case.
func Compare(want, got *Result) []Diff {
	var d []Diff
	add := func(field, w, g string) {
		if w != g {
			d = append(d, Diff{Field: field, Want: w, Got: g})
		}
	}
	add("setup_errnos", strings.Join(want.SetupErrnos, ","), strings.Join(got.SetupErrnos, ","))
	add("enable_errnos", strings.Join(want.EnableErrs, ","), strings.Join(got.EnableErrs, ","))
	add("ok", fmt.Sprint(want.OK), fmt.Sprint(got.OK))
	add("errno", want.Errno, got.Errno)
	switch {
	case want.Error == nil && got.Error == nil:
	case want.Error == nil || got.Error == nil:
		add("error", fmtLog(want.Error), fmtLog(got.Error))
	default:
		add("subsys", want.Error.Subsys, got.Error.Subsys)
		add("msg", want.Error.Msg, got.Error.Msg)
		add("cmd", want.Error.Cmd, got.Error.Cmd)
		if !(wildPos(want.Error) && wildPos(got.Error)) {
			add("pos", fmt.Sprint(want.Error.Pos), fmt.Sprint(got.Error.Pos))
		}
	}
	add("readback", strings.Join(want.Readback, "\n"), strings.Join(got.Readback, "\n"))
	add("hist", strings.Join(want.Hist, "\n"), strings.Join(got.Hist, "\n"))
	keys := map[string]bool{}
	for k := range want.Formats {
		keys[k] = true
	}
	for k := range got.Formats {
		keys[k] = true
	}
	sorted := make([]string, 0, len(keys))
	for k := range keys {
		sorted = append(sorted, k)
	}
	sort.Strings(sorted)
	for _, k := range sorted {
		w, wok := want.Formats[k]
		g, gok := got.Formats[k]
		switch {
		case !wok:
			add("formats["+k+"]", "(no event)", g)
		case !gok:
			add("formats["+k+"]", w, "(no event)")
		default:
			add("formats["+k+"]", stripID(w), stripID(g))
		}
	}
	return d
}

// wildPos reports whether an entry's caret lies beyond the furthest place
// the kernel's caret arithmetic can reach (one past the command's end).
// Such positions come from pointer differences in the kernel (6.12 logs
// one for a BTF member typed :string) and change from boot to boot, so two
// wild positions compare equal whatever their values.
func wildPos(e *LogEntry) bool { return e.Pos > len(e.Cmd)+1 }

func fmtLog(e *LogEntry) string {
	if e == nil {
		return "(none)"
	}
	return fmt.Sprintf("%s: %s | %s | pos %d", e.Subsys, e.Msg, e.Cmd, e.Pos)
}
