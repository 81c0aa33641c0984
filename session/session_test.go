package session

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/ktrace-dev/ktrace/events"
	"github.com/ktrace-dev/ktrace/internal/vmtest"
)

func TestParse(t *testing.T) {
	data := Header + "\np:kprobes/a vfs_read\n\n# comment\nr10:kprobes/b vfs_write\n" + EnabledPrefix + "kprobes/a\n"
	lines, enabled, err := Parse([]byte(data))
	if err != nil {
		t.Fatal(err)
	}
	want := []Line{{N: 2, Text: "p:kprobes/a vfs_read"}, {N: 5, Text: "r10:kprobes/b vfs_write"}}
	if !reflect.DeepEqual(lines, want) || !reflect.DeepEqual(enabled, []string{"kprobes/a"}) {
		t.Errorf("Parse = %v %v, want %v [kprobes/a]", lines, enabled, want)
	}
}

// TestFormatRoundTrip writes a registry's session, parses it back into a
// fresh registry and requires the same readback and enabled events.
func TestFormatRoundTrip(t *testing.T) {
	m := vmtest.Model(t, "6.12")
	reg := events.NewRegistry(m, nil)
	for _, l := range []string{"p:a vfs_read", "p:g/b vfs_write count=$arg3:u64", "r:c vfs_read $retval"} {
		if err := reg.Exec(events.DynamicEvents, l); err != nil {
			t.Fatal(err)
		}
	}
	if err := reg.SetEnabled(reg.Event("g", "b"), true); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "session")
	if err := Save(p, Format(reg)); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	lines, enabled, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	again := events.NewRegistry(m, nil)
	for _, l := range lines {
		if err := again.Exec(events.DynamicEvents, l.Text); err != nil {
			t.Fatalf("line %d %q: %v", l.N, l.Text, err)
		}
	}
	if got, want := again.Readback(events.DynamicEvents), reg.Readback(events.DynamicEvents); got != want {
		t.Errorf("readback after the round trip:\n%s\nwant:\n%s", got, want)
	}
	if !reflect.DeepEqual(enabled, []string{"g/b"}) {
		t.Errorf("enabled %v, want [g/b]", enabled)
	}
	if ev, err := Find(again, "b"); err != nil || ev.Group != "g" {
		t.Errorf("Find(b) = %v, %v", ev, err)
	}
	if _, err := Find(again, "nosuch"); err == nil {
		t.Error("Find(nosuch) succeeded")
	}
}

// TestLockWaits checks that a second holder waits, then gives up with
// ErrInUse.
func TestLockWaits(t *testing.T) {
	p := filepath.Join(t.TempDir(), "s")
	unlock, err := Lock(p, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	if _, err := Lock(p, 50*time.Millisecond); !errors.Is(err, ErrInUse) {
		t.Errorf("second Lock: %v, want ErrInUse", err)
	}
}
