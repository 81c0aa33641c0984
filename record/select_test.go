package record

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/ktrace-dev/ktrace/events"
	"github.com/ktrace-dev/ktrace/grammar"
	"github.com/ktrace-dev/ktrace/kernel"
	"github.com/ktrace-dev/ktrace/session"
)

// TestSelect checks which events record attaches: the LINEs' events
// (a new event, or a probe appended to an existing one) and the session's
// enabled events, not its disabled ones.
func TestSelect(t *testing.T) {
	m, err := kernel.Embedded()
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "session")
	content := session.Header + "\np:kprobes/on vfs_read\np:kprobes/off vfs_write\n" + session.EnabledPrefix + "kprobes/on\n"
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	load := func() *events.Registry {
		st, err := session.Open(p, events.NewRegistry(m, grammar.Latest), session.Replayer{})
		if err != nil {
			t.Fatal(err)
		}
		st.Close()
		return st.Reg
	}
	var defined []string
	evs, named, err := Select(load(), []string{"p:bench do_sys_openat2 dfd=%di:s32", "r:ret vfs_read $retval"}, func(l string) { defined = append(defined, l) })
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
	if len(named) != 2 || named[0] != evs[1] || named[1] != evs[2] {
		t.Errorf("named by the lines: %v", named)
	}
	if len(defined) != 2 {
		t.Errorf("defined called for %q", defined)
	}
	// Without LINEs the enabled session event alone is recorded.
	if evs, _, err := Select(load(), nil, nil); err != nil || len(evs) != 1 || evs[0].Name != "on" {
		t.Errorf("session only: %d events, %v", len(evs), err)
	}
}
