package conformance

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"

	"github.com/ktrace-dev/ktrace/events"
	"github.com/ktrace-dev/ktrace/grammar"
	"github.com/ktrace-dev/ktrace/internal/vmtest"
	"github.com/ktrace-dev/ktrace/kernel"
	"github.com/ktrace-dev/ktrace/tracefs"
)

// emulate runs each case through ktrace's own registry, a fresh one per
// case (as the guest clears all events before each), and returns results
// shaped like the kernel's.
func emulate(m *kernel.Model, d *grammar.Dialect, cases []Case) []Result {
	out := make([]Result, len(cases))
	for i := range cases {
		out[i] = emulateCase(m, d, &cases[i])
	}
	return out
}

// fileOf is the control file a case names (kprobe_events when none).
func fileOf(name string) events.File {
	if f, ok := events.FileNamed(name); ok {
		return f
	}
	return events.KprobeEvents
}

func emulateCase(m *kernel.Model, d *grammar.Dialect, c *Case) (r Result) {
	r = Result{
		Corpus: c.Corpus, Index: c.Index, Line: c.Line, Setup: c.Setup, File: c.File, Enable: c.Enable,
		SetupErrnos: []string{}, Readback: []string{}, Formats: map[string]string{},
	}
	defer func() {
		// ktrace must never panic on user input: a panic is a
		// disagreement like any other, reported with the case.
		if p := recover(); p != nil {
			r.Problems = append(r.Problems, fmt.Sprintf("ktrace panicked: %v", p))
		}
	}()
	reg := events.NewRegistry(m, d)
	// The guest has one CPU.
	fsys := tracefs.New(tracefs.NewRegistryBackend(reg), tracefs.Options{Major: d.Major, Minor: d.Minor, CPUs: 1,
		Static: func() []tracefs.StaticEvent { return tracefs.StaticEvents(m) }})
	for _, s := range c.Setup {
		file, line := SetupTarget(s, c.File)
		var err error
		if IsEventFile(file) {
			err = writeFS(fsys, file, line+"\n")
		} else {
			_, err = reg.Write(fileOf(file), []byte(line+"\n"))
		}
		r.SetupErrnos = append(r.SetupErrnos, ErrnoName(err))
	}
	var enableErrs []string
	failed := false
	for _, name := range c.Enable {
		grp, ev, _ := strings.Cut(name, "/")
		var err error = syscall.ENOENT
		if e := reg.Event(grp, ev); e != nil {
			err = reg.SetEnabled(e, true)
		}
		enableErrs = append(enableErrs, ErrnoName(err))
		failed = failed || err != nil
	}
	if failed {
		r.EnableErrs = enableErrs
	}
	if IsEventFile(c.File) {
		emulateEventFile(fsys, c, &r)
	} else {
		_, err := reg.Write(fileOf(c.File), []byte(c.Line+"\n"))
		r.OK, r.Errno = err == nil, ErrnoName(err)
		var we *events.WriteError
		if errors.As(err, &we) && we.Last() != nil {
			r.Error = we.Last()
		}
		r.Readback = Lines(reg.Readback(fileOf(c.File)))
	}
	// Formats are read through the emulated tracefs, as the guest runner
	// reads them from the kernel's: an event whose directory the release
	// does not make (6.1's "p:grp/enable") has no format to read.
	for _, e := range reg.Events() {
		if b, err := fsys.ReadFile("events/" + e.Group + "/" + e.Name + "/format"); err == nil {
			r.Formats[e.Group+"/"+e.Name] = string(b)
		}
	}
	return r
}

// emulateEventFile writes a case's line to an events/ file of the
// emulated tracefs, as the guest runner does on the kernel's.
func emulateEventFile(fsys *tracefs.FS, c *Case, r *Result) {
	before := len(fsys.ErrorLog())
	err := writeFS(fsys, c.File, c.Line+"\n")
	r.OK, r.Errno = err == nil, ErrnoName(err)
	if logs := fsys.ErrorLog(); len(logs) > before {
		e := logs[len(logs)-1]
		r.Error = &e
	}
	if b, err := fsys.ReadFile(c.File); err == nil {
		r.Readback = Lines(string(b))
	}
	if strings.HasSuffix(c.File, "/trigger") {
		if b, err := fsys.ReadFile(strings.TrimSuffix(c.File, "trigger") + "hist"); err == nil {
			r.Hist = Lines(string(b))
		}
	}
}

// writeFS is one write(2) to a file of the emulated tracefs, as
// `echo >>` does.
func writeFS(fsys *tracefs.FS, name, data string) error {
	h, err := fsys.Open(name, os.O_WRONLY|os.O_APPEND)
	if err != nil {
		return err
	}
	defer h.Close()
	_, err = h.Write([]byte(data))
	return err
}

// loadModel opens the snapshot of kernel k and its dialect row.
func loadModel(k vmtest.Kernel) (*kernel.Model, *grammar.Dialect, error) {
	m, err := kernel.LoadSnapshot(k.Dir)
	if err != nil {
		return nil, nil, fmt.Errorf("kernel snapshot %s: %w", k.Name, err)
	}
	major, minor, _ := m.KernelVersion()
	return m, grammar.DialectFor(major, minor), nil
}

// reportEmulation compares ktrace's emulation of the cases behind want
// with the kernel's results, prints the agreement figure and every
// disagreement field by field, and returns the keys that disagree.
// Disagreements whose key is in known are listed but not counted as
// failures; the caller decides what fails.
func reportEmulation(t *testing.T, k vmtest.Kernel, want []Result, known map[string]string) []string {
	t.Helper()
	m, d, err := loadModel(k)
	if err != nil {
		t.Errorf("conformance %s: %v", k.Name, err)
		return nil
	}
	cases := make([]Case, len(want))
	for i, w := range want {
		cases[i] = Case{Corpus: w.Corpus, Index: w.Index, Line: w.Line, Setup: w.Setup, File: w.File, Enable: w.Enable}
	}
	return compareEmulation(t, k.Name, want, emulate(m, d, cases), known)
}

// compareEmulation prints the agreement of got (ktrace) with want (Linux)
// and returns the keys of the disagreeing cases.
func compareEmulation(t *testing.T, kernelName string, want, got []Result, known map[string]string) []string {
	t.Helper()
	var bad []string
	var report strings.Builder
	for i := range want {
		diffs := Compare(&want[i], &got[i])
		for _, p := range got[i].Problems {
			diffs = append(diffs, Diff{Field: "ktrace", Want: "", Got: p})
		}
		if len(diffs) == 0 {
			continue
		}
		key := want[i].Key()
		bad = append(bad, key)
		tag := ""
		if reason, ok := known[kernelName+"\t"+key]; ok {
			tag = " [known: " + reason + "]"
		}
		fmt.Fprintf(&report, "%s %s %q%s\n", kernelName, key, clip(want[i].Line, 200), tag)
		for _, d := range diffs {
			report.WriteString(describe(d))
		}
	}
	n := len(want)
	pct := 100.0
	if n > 0 {
		pct = 100 * float64(n-len(bad)) / float64(n)
	}
	t.Logf("conformance %s: %d/%d agree (%.1f%%)", kernelName, n-len(bad), n, pct)
	if report.Len() > 0 {
		t.Logf("disagreements on %s:\n%s", kernelName, report.String())
	}
	return bad
}

// describe renders one field's disagreement compactly: single-line values
// side by side (clipped), multi-line values (format files) by their first
// differing line.
func describe(d Diff) string {
	if !strings.Contains(d.Want, "\n") && !strings.Contains(d.Got, "\n") {
		return fmt.Sprintf("    %s: linux %q, ktrace %q\n", d.Field, clip(d.Want, 300), clip(d.Got, 300))
	}
	wl, gl := strings.Split(d.Want, "\n"), strings.Split(d.Got, "\n")
	i := 0
	for i < len(wl) && i < len(gl) && wl[i] == gl[i] {
		i++
	}
	at := func(l []string) string {
		if i < len(l) {
			return clip(l[i], 300)
		}
		return "(end)"
	}
	return fmt.Sprintf("    %s: line %d: linux %q, ktrace %q (%d vs %d lines)\n", d.Field, i+1, at(wl), at(gl), len(wl), len(gl))
}

// clip shortens s to at most n bytes, marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// readKnown parses known-differences.txt: "kernel<TAB>corpus:index<TAB>reason"
// per line, '#' comments and blank lines ignored. Keys are
// "kernel<TAB>corpus:index".
func readKnown(path string) (map[string]string, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return map[string]string{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("known differences: %w", err)
	}
	out := map[string]string{}
	for n, line := range strings.Split(string(b), "\n") {
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.SplitN(line, "\t", 3)
		if len(f) != 3 || f[0] == "" || !strings.Contains(f[1], ":") || strings.TrimSpace(f[2]) == "" {
			return nil, fmt.Errorf("%s:%d: want kernel<TAB>corpus:index<TAB>reason, got %q", path, n+1, line)
		}
		out[f[0]+"\t"+f[1]] = f[2]
	}
	return out, nil
}

// TestConformanceGolden checks ktrace's emulation against the committed
// goldens of every pinned kernel, without a VM. It fails on any
// disagreement not listed in known-differences.txt, on listed differences
// that no longer occur, and on goldens that are out of date with the corpus.
func TestConformanceGolden(t *testing.T) {
	dir := corpusDir(t)
	goldens, err := filepath.Glob(filepath.Join(dir, "golden-*.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if len(goldens) == 0 {
		t.Skipf("no goldens in %s", dir)
	}
	known, err := readKnown(filepath.Join(dir, "known-differences.txt"))
	if err != nil {
		t.Fatal(err)
	}
	kdir, err := vmtest.KernelsDir()
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(goldens)
	seen := map[string]bool{}
	for _, g := range goldens {
		name := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(g), "golden-"), ".jsonl")
		t.Run(name, func(t *testing.T) {
			k := vmtest.Kernel{Name: name, Dir: filepath.Join(kdir, name)}
			if _, err := os.Stat(filepath.Join(k.Dir, "kallsyms")); err != nil {
				msg := fmt.Sprintf("kernel snapshot %s missing (%v): provide ../shared/kernels or KTRACE_KERNELS", name, err)
				if os.Getenv("CI") == "true" {
					t.Fatal(msg)
				}
				t.Skip(msg)
			}
			want, err := ReadGolden(g)
			if err != nil {
				t.Fatal(err)
			}
			want = freshGoldens(t, dir, name, want)
			bad := reportEmulation(t, k, want, known)
			unexpected := 0
			for _, key := range bad {
				seen[name+"\t"+key] = true
				if _, ok := known[name+"\t"+key]; !ok {
					unexpected++
				}
			}
			stillKnown := 0
			for kk := range known {
				if strings.HasPrefix(kk, name+"\t") {
					if seen[kk] {
						stillKnown++
					} else {
						t.Errorf("known-differences.txt: %s now agrees (or names no case): remove the line", strings.ReplaceAll(kk, "\t", " "))
					}
				}
			}
			t.Logf("conformance %s: %d known differences remain", name, stillKnown)
			if unexpected > 0 {
				t.Errorf("conformance %s: %d disagreements with Linux not in known-differences.txt", name, unexpected)
			}
		})
	}
}

// freshGoldens returns the golden results whose case is still in the
// corpus unchanged. Cases that changed, vanished or have no golden yet
// mean the goldens need regenerating (go test ./internal/conformance -run
// VM -update): that fails the test under CI=true and is logged otherwise,
// so that a corpus edit does not break everyone's local test run until the
// goldens are regenerated.
func freshGoldens(t *testing.T, dir, kernelName string, want []Result) []Result {
	t.Helper()
	cases, err := LoadCases(dir, kernelName)
	if err != nil {
		t.Fatal(err)
	}
	current := map[string]*Case{}
	for i := range cases {
		current[cases[i].Key()] = &cases[i]
	}
	var fresh []Result
	for i := range want {
		w := &want[i]
		c, ok := current[w.Key()]
		if ok && c.Line == w.Line && c.File == w.File &&
			strings.Join(c.Setup, "\n") == strings.Join(w.Setup, "\n") &&
			strings.Join(c.Enable, "\n") == strings.Join(w.Enable, "\n") {
			fresh = append(fresh, *w)
		}
	}
	if stale := len(want) - len(fresh); stale > 0 || len(cases) != len(fresh) {
		msg := fmt.Sprintf("golden-%s.jsonl is out of date with the corpus: %d of %d golden cases changed or removed, %d corpus cases without a golden; checking the %d that match (regenerate: go test ./internal/conformance -run VM -update)",
			kernelName, stale, len(want), len(cases)-len(fresh), len(fresh))
		if os.Getenv("CI") == "true" {
			t.Error(msg)
		} else {
			t.Log(msg)
		}
	}
	return fresh
}
