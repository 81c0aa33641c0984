package catalog

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/ktrace-dev/ktrace/grammar"
	"github.com/ktrace-dev/ktrace/internal/vmtest"
)

func TestListFunctions(t *testing.T) {
	m := vmtest.Model(t, "6.12")
	var out, notes bytes.Buffer
	if err := List(&out, &notes, m, grammar.Latest, []string{"vfs_read", "ext4:ext4_sync_fs"}, false, false); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "vfs_read") || !strings.Contains(out.String(), "ext4:ext4_sync_fs") {
		t.Errorf("listing %q, want vfs_read and ext4:ext4_sync_fs", out.String())
	}
	if want := "ktrace: module ext4 is not loaded in the model (kallsyms has none of its symbols)\n"; notes.String() != want {
		t.Errorf("notes %q, want %q", notes.String(), want)
	}
}

func TestListHintNote(t *testing.T) {
	m := vmtest.Model(t, "6.1")
	var out, notes bytes.Buffer
	if err := List(&out, &notes, m, grammar.DialectFor(6, 1), []string{"vfs_read"}, false, false); err != nil {
		t.Fatal(err)
	}
	// A hint keeps its own prefix.
	if !strings.HasPrefix(notes.String(), "hint: fprobe events (f lines) need Linux 6.12") {
		t.Errorf("notes %q, want the fprobe hint", notes.String())
	}
}

func TestListNoMatch(t *testing.T) {
	m := vmtest.Model(t, "6.12")
	for _, tc := range []struct {
		tracepoints bool
		glob, want  string
	}{
		{false, "nosuch_fn_*", "no function of the model matches 'nosuch_fn_*'"},
		{true, "nosuch:*", "no tracepoint of the model matches 'nosuch:*'"},
	} {
		var out, notes bytes.Buffer
		err := List(&out, &notes, m, grammar.Latest, []string{tc.glob}, tc.tracepoints, true)
		if !errors.Is(err, ErrNotFound) || err.Error() != tc.want {
			t.Errorf("%s: err = %v, want ErrNotFound %q", tc.glob, err, tc.want)
		}
		if out.Len() != 0 {
			t.Errorf("%s: listing %q, want none", tc.glob, out.String())
		}
	}
}

func TestListBadGlob(t *testing.T) {
	m := vmtest.Model(t, "6.12")
	var out, notes bytes.Buffer
	err := List(&out, &notes, m, grammar.Latest, []string{"sched:[x"}, true, false)
	if !errors.Is(err, ErrBadGlob) || !strings.HasPrefix(err.Error(), "funcs -t: bad glob") {
		t.Errorf("tracepoints: err = %v, want ErrBadGlob after \"funcs -t: \"", err)
	}
	err = List(&out, &notes, m, grammar.Latest, []string{"[bad"}, false, false)
	if !errors.Is(err, ErrBadGlob) || !strings.HasPrefix(err.Error(), "bad glob") {
		t.Errorf("functions: err = %v, want ErrBadGlob", err)
	}
}
