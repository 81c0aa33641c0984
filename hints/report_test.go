package hints

import (
	"bytes"
	"strings"
	"testing"

	"github.com/ktrace-dev/ktrace/events"
	"github.com/ktrace-dev/ktrace/grammar"
	"github.com/ktrace-dev/ktrace/internal/vmtest"
)

func TestReport(t *testing.T) {
	m := vmtest.Model(t, "6.12")
	line := "p:x do_sys_opnat2"
	err := events.NewRegistry(m, grammar.Latest).Exec(events.DynamicEvents, line)
	if err == nil {
		t.Fatalf("%q accepted", line)
	}
	var w bytes.Buffer
	(&Hinter{Model: m, Dialect: grammar.Latest}).Report(&w, line, events.DynamicEvents, err)
	lines := strings.Split(strings.TrimSuffix(w.String(), "\n"), "\n")
	if len(lines) < 3 || !strings.HasPrefix(lines[0], "trace_kprobe: error: ") || !strings.HasPrefix(lines[1], "  Command: p:x do_sys_opnat2") {
		t.Fatalf("report %q, want the error_log entry first", w.String())
	}
	if last := lines[len(lines)-1]; last != "hint: kallsyms has no do_sys_opnat2; did you mean do_sys_openat2?" {
		t.Errorf("last line %q, want the hint", last)
	}
}

func TestReportWithoutLog(t *testing.T) {
	m := vmtest.Model(t, "6.12")
	var w bytes.Buffer
	(&Hinter{Model: m, Dialect: grammar.Latest}).Report(&w, "p:a vfs_read", events.DynamicEvents, nil)
	if w.Len() != 0 {
		t.Errorf("report %q for no error_log entry, want nothing", w.String())
	}
}

func TestWriteNeeds(t *testing.T) {
	m := vmtest.Model(t, "6.1")
	var w bytes.Buffer
	n := WriteNeeds(&w, m, "f:q vfs_read")
	if len(n) == 0 {
		t.Fatal("an fprobe line needs nothing on 6.1")
	}
	if want := `ktrace: "f:q vfs_read" needs ` + strings.Join(n, "; ") + "\n"; w.String() != want {
		t.Errorf("note %q, want %q", w.String(), want)
	}
	w.Reset()
	if n := WriteNeeds(&w, m, "p:a vfs_read"); n != nil || w.Len() != 0 {
		t.Errorf("p line: needs %q, note %q; want none", n, w.String())
	}
}
