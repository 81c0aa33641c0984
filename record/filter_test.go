package record

import (
	"errors"
	"testing"

	"github.com/ktrace-dev/ktrace/events"
	"github.com/ktrace-dev/ktrace/grammar"
	"github.com/ktrace-dev/ktrace/internal/vmtest"
)

func TestSetFilters(t *testing.T) {
	m := vmtest.Model(t, "6.12")
	reg := events.NewRegistry(m, grammar.Latest)
	for _, l := range []string{"p:a vfs_read count=%dx:u64", "r:b vfs_read ret=$retval:s64"} {
		if err := reg.Exec(events.KprobeEvents, l); err != nil {
			t.Fatal(err)
		}
	}
	evs := reg.Events()
	if err := SetFilters(evs, `common_pid != 0 && comm ~ "dd*"`, m, grammar.Latest); err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs {
		if ev.Filter == nil {
			t.Errorf("%s has no filter", ev.Name)
		}
	}
	// count is a field of a only: b fails with the kernel's error, and
	// nothing changes.
	err := SetFilters(evs, "count > 100", m, grammar.Latest)
	var fe *FilterError
	if !errors.As(err, &fe) || fe.Event != "kprobes/b" || fe.Err.Code != grammar.FiltFieldNotFound || fe.Err.LogPos() != 6 {
		t.Fatalf("count > 100 on b: %v", err)
	}
	want := "event filter parse error: error: Field not found\n  Command: count > 100\n                 ^\n"
	if fe.LogText() != want {
		t.Errorf("log text %q, want %q", fe.LogText(), want)
	}
	if evs[0].Filter == nil || evs[0].Filter.Expr == "count > 100" {
		t.Errorf("a's filter changed by a failed SetFilters")
	}
	if err := SetFilters(evs, "  0 ", m, grammar.Latest); err != nil || evs[0].Filter != nil {
		t.Errorf("0 did not clear: %v", err)
	}
}
