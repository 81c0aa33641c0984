package complete

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/ktrace-dev/ktrace/events"
	"github.com/ktrace-dev/ktrace/grammar"
	"github.com/ktrace-dev/ktrace/kernel"
)

func TestKernels(t *testing.T) {
	dir := t.TempDir()
	for _, d := range []string{"k61", "k612", "other"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	got := Kernels(dir + "/k6")
	if !slices.Contains(got, dir+"/k61/") || !slices.Contains(got, dir+"/k612/") || slices.Contains(got, dir+"/other/") {
		t.Errorf("Kernels = %q", got)
	}
}

func TestLineAndEvents(t *testing.T) {
	m, err := kernel.Embedded()
	if err != nil {
		t.Fatal(err)
	}
	if got := Line(m, "p:ev vfs_rea"); !slices.Contains(got, "p:ev vfs_read") {
		t.Errorf("Line = %q", got)
	}
	if got := Line(m, "p:ev vfs_read $ar"); got != nil {
		t.Errorf("Line past the place = %q", got)
	}
	reg := events.NewRegistry(m, grammar.Latest)
	for _, l := range []string{"p:a vfs_read", "p:b vfs_write"} {
		if _, err := reg.Define(events.KprobeEvents, l); err != nil {
			t.Fatal(err)
		}
	}
	if got := Events(reg, "kprobes/", []string{"kprobes/a"}, nil); !slices.Equal(got, []string{"kprobes/b"}) {
		t.Errorf("Events = %q", got)
	}
	if got := Events(reg, "", nil, func(on bool) bool { return on }); got != nil {
		t.Errorf("enabled Events = %q", got)
	}
}
