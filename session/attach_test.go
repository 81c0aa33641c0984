package session

import (
	"errors"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/ktrace-dev/ktrace/events"
	"github.com/ktrace-dev/ktrace/grammar"
	"github.com/ktrace-dev/ktrace/internal/vmtest"
)

// Load opens read only or for update; Attach holds the lock until save,
// which writes back what the tracefs's registry has then.
func TestLoadAndAttach(t *testing.T) {
	m := vmtest.Model(t, "6.12")
	p := filepath.Join(t.TempDir(), "session")
	st, err := Load(p, m, grammar.Latest, true)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Add([]string{"p:a vfs_read"}); err != nil {
		t.Fatal(err)
	}
	if err := st.Save(); err != nil {
		t.Fatal(err)
	}
	st.Close()

	reg := events.NewRegistry(m, grammar.Latest)
	save, err := Attach(p, reg, Replayer{})
	if err != nil {
		t.Fatal(err)
	}
	if got := Listed(reg); !reflect.DeepEqual(got, []string{"p:kprobes/a vfs_read"}) {
		t.Errorf("attached registry lists %q", got)
	}
	// The session stays locked until save.
	if _, err := Lock(p, 10*time.Millisecond); !errors.Is(err, ErrInUse) {
		t.Errorf("Lock while attached: %v, want ErrInUse", err)
	}
	if _, err := reg.Define(events.DynamicEvents, "r:b vfs_write"); err != nil {
		t.Fatal(err)
	}
	if err := save(); err != nil {
		t.Fatal(err)
	}
	ro, err := Load(p, m, grammar.Latest, false)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := Listed(ro.Reg), []string{"p:kprobes/a vfs_read", "r10:kprobes/b vfs_write"}; !reflect.DeepEqual(got, want) {
		t.Errorf("saved session lists %q, want %q", got, want)
	}
	if err := ro.Save(); err == nil {
		t.Error("Save of a session loaded read only succeeded")
	}
}

func TestAttachNoSession(t *testing.T) {
	save, err := Attach("", nil, Replayer{})
	if err != nil {
		t.Fatal(err)
	}
	if err := save(); err != nil {
		t.Errorf("save without a session: %v", err)
	}
}
