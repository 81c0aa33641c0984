package conformance

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestRunCaseOnPlainFiles drives RunCase over a directory of ordinary files
// standing in for tracefs: it checks which files are truncated, what is
// written where (one line plus newline per write), and that format files
// are collected from the dynamic_events content, with a missing one
// reported as a runner problem rather than a crash.
func TestRunCaseOnPlainFiles(t *testing.T) {
	root := t.TempDir()
	put := func(name, s string) {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	get := func(name string) string {
		b, err := os.ReadFile(filepath.Join(root, name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	put(DynamicEvents, "p:kprobes/old vfs_read\n")
	put(KprobeEvents, "")
	put("error_log", "[    1.000000] trace_kprobe: error: stale\n  Command: x\n           ^\n")
	put("events/enable", "")
	put("events/kprobes/a/enable", "")
	put("events/kprobes/a/format", "name: a\nID: 1\n")

	ts := &Tracefs{Root: root}
	c := Case{Corpus: "c.jsonl", Index: 4, Line: "p:kprobes/b vfs_write", File: DynamicEvents,
		Setup: []string{"p:kprobes/a vfs_read", "kprobe_events:p:k vfs_read"}, Enable: []string{"kprobes/a"}}
	r := ts.RunCase(&c, true)

	if got, want := get(DynamicEvents), "p:kprobes/a vfs_read\np:kprobes/b vfs_write\n"; got != want {
		t.Errorf("dynamic_events = %q, want %q (truncated, then one write per line)", got, want)
	}
	if got, want := get(KprobeEvents), "p:k vfs_read\n"; got != want {
		t.Errorf("kprobe_events = %q, want %q", got, want)
	}
	if got := get("events/enable"); got != "0\n" {
		t.Errorf("events/enable = %q, want all events disabled first", got)
	}
	if got := get("events/kprobes/a/enable"); got != "1\n" {
		t.Errorf("events/kprobes/a/enable = %q, want 1", got)
	}
	if got := get("error_log"); got != "" {
		t.Errorf("error_log not cleared: %q", got)
	}
	if r.Error != nil || !r.OK || r.Errno != "" || !reflect.DeepEqual(r.SetupErrnos, []string{"", ""}) || r.EnableErrs != nil {
		t.Errorf("outcome = ok %v errno %q error %+v setup %q enable %q", r.OK, r.Errno, r.Error, r.SetupErrnos, r.EnableErrs)
	}
	if want := []string{"p:kprobes/a vfs_read", "p:kprobes/b vfs_write"}; !reflect.DeepEqual(r.Readback, want) {
		t.Errorf("readback = %q, want %q", r.Readback, want)
	}
	if want := map[string]string{"kprobes/a": "name: a\nID: 1\n"}; !reflect.DeepEqual(r.Formats, want) {
		t.Errorf("formats = %q, want %q", r.Formats, want)
	}
	if len(r.Problems) != 1 || !strings.Contains(r.Problems[0], "events/kprobes/b/format") {
		t.Errorf("problems = %q, want the missing format of kprobes/b", r.Problems)
	}

	// An event that cannot be enabled and a file that cannot be opened
	// are recorded with their errno.
	c = Case{Corpus: "c.jsonl", Index: 5, Line: "p:x y", File: KprobeEvents, Enable: []string{"kprobes/none"}}
	if err := os.Remove(filepath.Join(root, KprobeEvents)); err != nil {
		t.Fatal(err)
	}
	r = ts.RunCase(&c, false)
	if r.OK || r.Errno != "ENOENT" || !reflect.DeepEqual(r.EnableErrs, []string{"ENOENT"}) {
		t.Errorf("outcome = ok %v errno %q enable %q, want ENOENT for both", r.OK, r.Errno, r.EnableErrs)
	}
}
