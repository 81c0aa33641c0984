package conformance

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
)

// The tracefs control files a case can write to.
const (
	KprobeEvents    = "kprobe_events"
	DynamicEvents   = "dynamic_events"
	SyntheticEvents = "synthetic_events"
	UprobeEvents    = "uprobe_events"
)

// isControlFile reports whether name is a control file a case can write
// lines to.
func isControlFile(name string) bool {
	return name == KprobeEvents || name == DynamicEvents || name == SyntheticEvents || name == UprobeEvents
}

// IsEventFile reports whether name is a per-event or per-group file under
// events/ that a case may write: "events/GRP/EV/filter",
// "events/GRP/filter" or "events/GRP/EV/trigger".
func IsEventFile(name string) bool {
	parts := strings.Split(name, "/")
	if len(parts) < 3 || parts[0] != "events" {
		return false
	}
	last := parts[len(parts)-1]
	switch len(parts) {
	case 3:
		return last == "filter"
	case 4:
		return last == "filter" || last == "trigger"
	}
	return false
}

// Entry is one corpus line as written in a corpus file.
type Entry struct {
	Line    string   `json:"line"`
	Setup   []string `json:"setup,omitempty"`   // lines written first, each its own write; "dynamic_events:" / "kprobe_events:" prefix picks the file
	File    string   `json:"file,omitempty"`    // kprobe_events or dynamic_events; default from the line's first byte
	Kernels []string `json:"kernels,omitempty"` // kernel names the entry applies to; default all
	Enable  []string `json:"enable,omitempty"`  // "GRP/EV" events to enable after setup
	Note    string   `json:"note,omitempty"`
}

// Case is an Entry resolved for running: its place in the corpus and its
// target file filled in. It is what the guest runner reads.
type Case struct {
	Corpus string   `json:"corpus"` // corpus file base name, e.g. "kprobe-basic.jsonl"
	Index  int      `json:"index"`  // 0-based position among the file's entries
	Line   string   `json:"line"`
	Setup  []string `json:"setup"`
	File   string   `json:"file"`
	Enable []string `json:"enable,omitempty"`
}

// Key names a case as "corpus:index", the form known-differences.txt uses.
func (c *Case) Key() string { return fmt.Sprintf("%s:%d", c.Corpus, c.Index) }

// jsonLine encodes v as one JSON line without HTML escaping.
func jsonLine(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("conformance: encoding: %w", err)
	}
	return buf.Bytes(), nil
}

// DefaultFile is the control file a line goes to when its entry names
// none: kprobe_events for a line starting with p, r or -, else
// dynamic_events.
func DefaultFile(line string) string {
	if line != "" && strings.IndexByte("pr-", line[0]) >= 0 {
		return KprobeEvents
	}
	return DynamicEvents
}

// SetupTarget splits a setup line into the file it is written to and the
// text written: a "dynamic_events:", "kprobe_events:",
// "synthetic_events:", "uprobe_events:" or events/ file
// prefix ("events/kprobes/f/filter:a == 1") selects the file, otherwise
// it goes to def.
func SetupTarget(s, def string) (file, line string) {
	for _, f := range []string{DynamicEvents, KprobeEvents, SyntheticEvents, UprobeEvents} {
		if rest, ok := strings.CutPrefix(s, f+":"); ok {
			return f, rest
		}
	}
	if f, rest, ok := strings.Cut(s, ":"); ok && IsEventFile(f) {
		return f, rest
	}
	return def, s
}

// AppliesTo reports whether the entry runs on the named kernel.
func (e *Entry) AppliesTo(kernel string) bool {
	return len(e.Kernels) == 0 || slices.Contains(e.Kernels, kernel)
}

// ReadCorpus parses one corpus file. Blank lines are skipped; every other
// line must be a JSON Entry with a non-empty "line" or "setup".
func ReadCorpus(path string) ([]Entry, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("conformance: %w", err)
	}
	var out []Entry
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		text := bytes.TrimSpace(sc.Bytes())
		if len(text) == 0 {
			continue
		}
		var e Entry
		if err := json.Unmarshal(text, &e); err != nil {
			return nil, fmt.Errorf("conformance: %s:%d: %w", path, n, err)
		}
		if e.File != "" && !isControlFile(e.File) && !IsEventFile(e.File) {
			return nil, fmt.Errorf("conformance: %s:%d: unknown file %q", path, n, e.File)
		}
		out = append(out, e)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("conformance: %s: %w", path, err)
	}
	return out, nil
}

// CorpusFiles lists the corpus files in dir (every *.jsonl except the
// golden-* files), sorted by name.
func CorpusFiles(dir string) ([]string, error) {
	all, err := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	if err != nil {
		return nil, fmt.Errorf("conformance: %w", err)
	}
	var out []string
	for _, p := range all {
		if !strings.HasPrefix(filepath.Base(p), "golden-") {
			out = append(out, p)
		}
	}
	sort.Strings(out)
	return out, nil
}

// LoadCases reads every corpus file in dir and returns the cases that apply
// to the named kernel, in file then entry order.
func LoadCases(dir, kernel string) ([]Case, error) {
	files, err := CorpusFiles(dir)
	if err != nil {
		return nil, err
	}
	var out []Case
	for _, p := range files {
		entries, err := ReadCorpus(p)
		if err != nil {
			return nil, err
		}
		for i, e := range entries {
			if !e.AppliesTo(kernel) {
				continue
			}
			file := e.File
			if file == "" {
				file = DefaultFile(e.Line)
			}
			setup := e.Setup
			if setup == nil {
				setup = []string{}
			}
			out = append(out, Case{Corpus: filepath.Base(p), Index: i, Line: e.Line, Setup: setup, File: file, Enable: e.Enable})
		}
	}
	return out, nil
}
