package tracer

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The test binary doubles as the reaper StartReaper runs.
func TestMain(m *testing.M) {
	RunReaperIfAsked()
	os.Exit(m.Run())
}

// TestReaperOnFiles starts a reaper (this test binary) on a directory of
// plain files standing in for tracefs: it reports ready, and once
// stopped removes this process's groups, and only those, by appending
// "-:GROUP/EVENT" to the file that lists them.
func TestReaperOnFiles(t *testing.T) {
	dir := t.TempDir()
	own := TraceFSPrefix + "_" + strconv.Itoa(os.Getpid()) + "_1"
	other := TraceFSPrefix + "_1_1"
	events := "p:" + own + "/a vfs_read\np:" + other + "/b vfs_read\n"
	path := filepath.Join(dir, "kprobe_events")
	if err := os.WriteFile(path, []byte(events), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := StartReaper(os.Args[0], dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Stop(); err != nil {
		t.Fatal(err)
	}
	want := events + "-:" + own + "/a\n"
	var got string
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if got = string(b); got == want {
			return
		}
	}
	t.Errorf("kprobe_events after the reaper:\n%s\nwant:\n%s", got, strings.TrimSuffix(want, "\n"))
}
