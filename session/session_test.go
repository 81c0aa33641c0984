package session

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ktrace-dev/ktrace/events"
	"github.com/ktrace-dev/ktrace/internal/vmtest"
)

func TestParse(t *testing.T) {
	data := Header + "\np:kprobes/a vfs_read\n\n# comment\nr10:kprobes/b vfs_write\n" + FilterPrefix + "kprobes/b common_pid != 1 && comm == \"a b\"\n" + EnabledPrefix + "kprobes/a\n"
	lines, filters, enabled, err := Parse([]byte(data))
	if err != nil {
		t.Fatal(err)
	}
	if want := []Filter{{N: 6, Event: "kprobes/b", Expr: `common_pid != 1 && comm == "a b"`}}; !reflect.DeepEqual(filters, want) {
		t.Errorf("filters = %v, want %v", filters, want)
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
	lines, _, enabled, err := Parse(data)
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

// TestFiltersKept saves an event's filter with the session and replays
// it: the reopened session's event has the same filter, set before the
// event is enabled; a filter the event's format does not take fails the
// replay with the kernel's message.
func TestFiltersKept(t *testing.T) {
	m := vmtest.Model(t, "6.12")
	reg := events.NewRegistry(m, nil)
	if err := reg.Exec(events.DynamicEvents, "p:g/w vfs_write count=$arg3:u64"); err != nil {
		t.Fatal(err)
	}
	ev := reg.Event("g", "w")
	if err := reg.SetFilterText(ev, "count > 100 && comm != \"dd\""); err != nil {
		t.Fatal(err)
	}
	if err := reg.SetEnabled(reg.Event("g", "w"), true); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "session")
	if err := Save(p, Format(reg)); err != nil {
		t.Fatal(err)
	}
	var order []string
	st, err := Open(p, events.NewRegistry(m, nil), Replayer{
		Enable: func(ev *events.Event) error {
			if ev.Filter == nil {
				order = append(order, "enabled before its filter")
			}
			order = append(order, "enable")
			return nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	got := st.Reg.Event("g", "w")
	if got.Filter == nil || got.Filter.Expr != `count > 100 && comm != "dd"` {
		t.Fatalf("replayed filter = %+v", got.Filter)
	}
	if !reflect.DeepEqual(order, []string{"enable"}) {
		t.Errorf("replay order %v", order)
	}
	bad := filepath.Join(t.TempDir(), "bad")
	os.WriteFile(bad, []byte(Header+"\np:g/w vfs_write\n"+FilterPrefix+"g/w nosuch == 1\n"), 0o644)
	if _, err := Open(bad, events.NewRegistry(m, nil), Replayer{}); err == nil || !strings.Contains(err.Error(), "Field not found") {
		t.Errorf("a filter on a missing field replayed: %v", err)
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
