package session

import (
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"

	"github.com/ktrace-dev/ktrace/events"
	"github.com/ktrace-dev/ktrace/grammar"
	"github.com/ktrace-dev/ktrace/internal/vmtest"
)

// A store opened for update adds all or nothing, removes, enables, saves,
// and a fresh read-only store sees the result.
func TestStoreUpdate(t *testing.T) {
	m := vmtest.Model(t, "6.12")
	p := filepath.Join(t.TempDir(), "session")
	st, err := OpenForUpdate(p, events.NewRegistry(m, grammar.Latest), Replayer{})
	if err != nil {
		t.Fatal(err)
	}
	added, err := st.Add([]string{"p:a vfs_read", "r:b vfs_write"})
	if err != nil || !reflect.DeepEqual(added, []string{"p:kprobes/a vfs_read", "r10:kprobes/b vfs_write"}) {
		t.Fatalf("Add = %q, %v", added, err)
	}
	_, err = st.Add([]string{"p:c vfs_read", "p:d vfs_read +0(%di"})
	var ae *AddError
	if !errors.As(err, &ae) || ae.Line != "p:d vfs_read +0(%di" || grammar.ErrnoOf(err) != syscall.EINVAL {
		t.Fatalf("Add of a bad line: %v", err)
	}
	if err := st.SetEnabled([]string{"a"}, true); err != nil {
		t.Fatal(err)
	}
	if err := st.Remove([]string{"kprobes/a"}); err == nil {
		t.Error("removing an enabled event succeeded")
	}
	if err := st.Remove([]string{"nosuch"}); err == nil {
		t.Error("removing a missing event succeeded")
	}
	if err := st.Save(); err != nil {
		t.Fatal(err)
	}
	st.Close()

	ro, err := Open(p, events.NewRegistry(m, grammar.Latest), Replayer{})
	if err != nil {
		t.Fatal(err)
	}
	// The saved session is the state at Save: a store keeps no rollback,
	// so the caller saves only after every change succeeded (c stays, as
	// the registry kept it).
	want := []string{"p:kprobes/a vfs_read  # enabled", "r10:kprobes/b vfs_write", "p:kprobes/c vfs_read"}
	if got := Listed(ro.Reg); !reflect.DeepEqual(got, want) {
		t.Errorf("Listed = %q, want %q", got, want)
	}
	if err := ro.Save(); err == nil {
		t.Error("Save of a read-only store succeeded")
	}
}

// A session line the model refuses is an error naming the line.
func TestStoreReplayError(t *testing.T) {
	m := vmtest.Model(t, "6.1")
	p := filepath.Join(t.TempDir(), "session")
	if err := Save(p, Header+"\nf:fprobes/x vfs_read\n"); err != nil {
		t.Fatal(err)
	}
	_, err := Open(p, events.NewRegistry(m, nil), Replayer{})
	if err == nil || !strings.Contains(err.Error(), "line 2 (f:fprobes/x vfs_read) is not accepted by kernel model") {
		t.Errorf("err = %v", err)
	}
}
