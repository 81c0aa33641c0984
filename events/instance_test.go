package events

import (
	"errors"
	"syscall"
	"testing"
)

// TestInstanceViews checks an instance's view of the events: its own enable
// state, and removal refused while an instance holds the event, as the
// kernel refuses a probe enabled in any instance.
func TestInstanceViews(t *testing.T) {
	r := newRegistry(t, "6.12")
	if _, err := r.Define(KprobeEvents, "p:myp vfs_read"); err != nil {
		t.Fatal(err)
	}
	inst := r.Instance()
	ev := inst.Event("kprobes", "myp")
	if ev == nil || ev.Enabled {
		t.Fatalf("instance sees %+v, want the event disabled", ev)
	}
	if err := inst.SetEnabled(ev, true); err != nil {
		t.Fatal(err)
	}
	if !inst.Event("kprobes", "myp").Enabled {
		t.Error("instance: enable not kept")
	}
	if r.Event("kprobes", "myp").Enabled {
		t.Error("top level sees the instance's enable")
	}
	if _, err := r.Define(KprobeEvents, "-:myp"); !errors.Is(err, syscall.EBUSY) {
		t.Errorf("removing an event enabled in an instance: %v, want EBUSY", err)
	}
	if err := r.Truncate(KprobeEvents); !errors.Is(err, syscall.EBUSY) {
		t.Errorf("truncating with an event enabled in an instance: %v, want EBUSY", err)
	}
	if err := inst.SetEnabled(ev, false); err != nil {
		t.Fatal(err)
	}
	inst.SetSoft(ev, true)
	if _, err := r.Define(KprobeEvents, "-:myp"); !errors.Is(err, syscall.EBUSY) {
		t.Errorf("removing an event in soft mode in an instance: %v, want EBUSY", err)
	}
	inst.Close()
	if _, err := r.Define(KprobeEvents, "-:myp"); err != nil {
		t.Errorf("removing after the instance went: %v", err)
	}
	if r.Event("kprobes", "myp") != nil {
		t.Error("event still defined")
	}
}
