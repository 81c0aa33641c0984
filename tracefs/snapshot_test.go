package tracefs

import (
	"errors"
	"strings"
	"syscall"
	"testing"
)

// snapshotFreed is the snapshot file of a kernel that has no spare
// buffer, as 6.1 and 6.12 print it (read in both guests).
const snapshotFreed = `# tracer: nop
#
#
# * Snapshot is freed *
#
# Snapshot commands:
# echo 0 > snapshot : Clears and frees snapshot buffer
# echo 1 > snapshot : Allocates snapshot buffer, if not already allocated.
#                      Takes a snapshot of the main buffer.
# echo 2 > snapshot : Clears snapshot buffer (but does not allocate or free)
#                      (Doesn't have to be '2' works with any number that
#                       is not a '0' or '1')
`

// TestSnapshotFile follows a session run in the 6.1 and 6.12 guests:
// `echo 1 > snapshot` swaps the trace aside (the trace starts again from
// the empty spare buffer, its counts with it), 2 clears the spare buffer,
// a second 1 swaps back, 0 frees it; values are read as kstrtoul reads
// them.
func TestSnapshotFile(t *testing.T) {
	f := newTestFS(t, &fakeBackend{})
	write := func(name, s string) error { return writeFile(f, name, s, false) }
	if got := readString(t, f, "snapshot"); got != snapshotFreed {
		t.Fatalf("snapshot at first:\n%s", got)
	}
	allocated := strings.Replace(snapshotFreed, "freed", "allocated", 1)
	if err := write("trace_marker", "hi"); err != nil {
		t.Fatal(err)
	}
	if err := write("snapshot", "1"); err != nil {
		t.Fatalf("echo 1 > snapshot: %v", err)
	}
	snap := readString(t, f, "snapshot")
	if !strings.HasPrefix(snap, strings.Replace(strings.Replace(traceHeaderFmt, "%s", "nop", 1), "%d/%d   #P:%d", "1/1   #P:1", 1)) || !strings.HasSuffix(snap, ": tracing_mark_write: hi\n") {
		t.Errorf("snapshot after echo 1:\n%s", snap)
	}
	if got, want := readString(t, f, "trace"), strings.Replace(strings.Replace(traceHeaderFmt, "%s", "nop", 1), "%d/%d   #P:%d", "0/0   #P:1", 1); got != want {
		t.Errorf("trace after echo 1:\n%s", got)
	}
	if err := write("trace_marker", "there"); err != nil {
		t.Fatal(err)
	}
	if err := write("snapshot", "2"); err != nil {
		t.Fatalf("echo 2 > snapshot: %v", err)
	}
	if got := readString(t, f, "snapshot"); got != allocated {
		t.Errorf("snapshot after echo 2:\n%s", got)
	}
	// Swap "there" aside, then back.
	for i := 0; i < 2; i++ {
		if err := write("snapshot", "1"); err != nil {
			t.Fatal(err)
		}
	}
	if got := readString(t, f, "snapshot"); got != allocated {
		t.Errorf("snapshot after two swaps:\n%s", got)
	}
	if got := readString(t, f, "trace"); !strings.HasSuffix(got, ": tracing_mark_write: there\n") {
		t.Errorf("trace after two swaps:\n%s", got)
	}
	for _, c := range []struct {
		in  string
		err error
	}{
		{"3", nil}, {"-1", syscall.EINVAL}, {"x", syscall.EINVAL}, {"1x", syscall.EINVAL},
		{"", syscall.EINVAL}, {" 1", syscall.EINVAL}, {"0x1", syscall.EINVAL}, {"10", nil},
	} {
		if err := write("snapshot", c.in); !errors.Is(err, c.err) && !(err == nil && c.err == nil) {
			t.Errorf("write %q: %v, want %v", c.in, err, c.err)
		}
	}
	if err := write("snapshot", "0"); err != nil {
		t.Fatal(err)
	}
	if got := readString(t, f, "snapshot"); got != snapshotFreed {
		t.Errorf("snapshot after echo 0:\n%s", got)
	}
}

// TestSnapshotTriggerAllocates: adding a snapshot trigger allocates the
// spare buffer (6.1 and 6.12); it may be freed while the trigger stays;
// a hist trigger's snapshot() action keeps it (echo 0 gives EBUSY).
func TestSnapshotTriggerAllocates(t *testing.T) {
	f := newTestFS(t, &fakeBackend{})
	if err := writeFile(f, "kprobe_events", "kprobes/myev", false); err != nil {
		t.Fatal(err)
	}
	trig := "events/kprobes/myev/trigger"
	if err := writeFile(f, trig, "snapshot", false); err != nil {
		t.Fatalf("snapshot trigger: %v", err)
	}
	if got := readString(t, f, "snapshot"); !strings.Contains(got, "# * Snapshot is allocated *") {
		t.Fatalf("snapshot after the trigger:\n%s", got)
	}
	if err := writeFile(f, "snapshot", "0", false); err != nil {
		t.Fatalf("free with a snapshot trigger: %v", err)
	}
	if err := writeFile(f, trig, "!snapshot", false); err != nil {
		t.Fatal(err)
	}
	if err := writeFile(f, trig, "hist:keys=common_pid:v=common_pid:onchange($v).snapshot()", false); err != nil {
		t.Fatalf("snapshot() action: %v", err)
	}
	if got := readString(t, f, "snapshot"); !strings.Contains(got, "# * Snapshot is allocated *") {
		t.Fatalf("snapshot after the action:\n%s", got)
	}
	if err := writeFile(f, "snapshot", "0", false); !errors.Is(err, syscall.EBUSY) {
		t.Fatalf("free with a snapshot() action: %v, want EBUSY", err)
	}
}
