package main

import (
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/ktrace-dev/ktrace/session"
)

// TestRecordSetup checks which events record attaches: the LINEs' events
// (a new event, or a probe appended to an existing one) and the session's
// enabled events, not its disabled ones.
func TestRecordSetup(t *testing.T) {
	state := t.TempDir()
	t.Setenv("XDG_STATE_HOME", state)
	session := session.Header + "\np:kprobes/on vfs_read\np:kprobes/off vfs_write\n" + session.EnabledPrefix + "kprobes/on\n"
	if err := os.MkdirAll(filepath.Join(state, "ktrace"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(state, "ktrace", "session"), []byte(session), 0o644); err != nil {
		t.Fatal(err)
	}
	g := &globals{kernel: "embedded"}
	_, evs, _, err := recordSetup(g, []string{"p:bench do_sys_openat2 dfd=%di:s32", "r:ret vfs_read $retval"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, ev := range evs {
		got = append(got, ev.Group+"/"+ev.Name)
	}
	want := []string{"kprobes/on", "kprobes/bench", "kprobes/ret"}
	if len(got) != len(want) {
		t.Fatalf("events %v, want %v", got, want)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Errorf("events %v, want %v", got, want)
		}
	}
	// Without LINEs the enabled session event alone is recorded.
	if _, evs, _, err := recordSetup(g, nil, io.Discard); err != nil || len(evs) != 1 || evs[0].Name != "on" {
		t.Errorf("session only: %d events, %v", len(evs), err)
	}
}
