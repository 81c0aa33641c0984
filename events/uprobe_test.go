package events

import (
	"errors"
	"strings"
	"syscall"
	"testing"
)

// fakeFS is a path lookup over a fixed table, for the lookup outcomes the
// host and the guest do not share (symlink loops, permissions, two names
// of one inode).
func fakeFS(t *testing.T) PathLookup {
	t.Helper()
	return func(path string) (FileID, bool, syscall.Errno) {
		switch path {
		case "/bin/prog", "/bin/alias":
			return FileID{Dev: 1, Ino: 42}, true, 0
		case "/bin/other":
			return FileID{Dev: 1, Ino: 43}, true, 0
		case "/loop":
			return FileID{}, false, syscall.ELOOP
		case "/secret/x":
			return FileID{}, false, syscall.EACCES
		case "/run/fifo":
			return FileID{Dev: 1, Ino: 7}, false, 0
		}
		return FileID{}, false, syscall.ENOENT
	}
}

func TestUprobeLookupAndIdentity(t *testing.T) {
	for _, rel := range []string{"6.1", "6.12"} {
		tests := []struct {
			setup []string
			line  string
			errno syscall.Errno
			msg   string
			read  string
		}{
			{line: "p /loop:0x10", errno: syscall.ELOOP, msg: "Failed to find the given file"},
			{line: "p /secret/x:0x10", errno: syscall.EACCES, msg: "Failed to find the given file"},
			{line: "p /run/fifo:0x10", errno: syscall.EINVAL, msg: "Not a regular file"},
			// Two names of one inode are the same probe; the readback
			// keeps the name each line typed.
			{setup: []string{"p:ev /bin/prog:0x10"}, line: "p:ev /bin/alias:0x10", errno: syscall.EEXIST, msg: "There is already the exact same probe event"},
			{setup: []string{"p:ev /bin/prog:0x10"}, line: "p:ev /bin/other:0x10",
				read: "p:uprobes/ev /bin/prog:0x0000000000000010\np:uprobes/ev /bin/other:0x0000000000000010\n"},
			{setup: []string{"p:a /bin/prog:0x10(0x8)"}, line: "p:b /bin/alias:0x10(0x10)", errno: syscall.EINVAL},
			{setup: []string{"p:a /bin/prog:0x10(0x8)"}, line: "p:b /bin/other:0x10(0x10)",
				read: "p:uprobes/a /bin/prog:0x0000000000000010(0x8)\np:uprobes/b /bin/other:0x0000000000000010(0x10)\n"},
		}
		for _, tt := range tests {
			r := newRegistry(t, rel)
			r.SetPathLookup(fakeFS(t))
			for _, s := range tt.setup {
				if err := r.Exec(UprobeEvents, s); err != nil {
					t.Fatalf("%s: setup %q: %v", rel, s, err)
				}
			}
			err := r.Exec(UprobeEvents, tt.line)
			if tt.errno == 0 {
				if err != nil {
					t.Errorf("%s: %q: %v", rel, tt.line, err)
				}
				if got := r.Readback(UprobeEvents); got != tt.read {
					t.Errorf("%s: %q: readback %q, want %q", rel, tt.line, got, tt.read)
				}
				continue
			}
			var we *WriteError
			if !errors.As(err, &we) || we.Errno != tt.errno {
				t.Errorf("%s: %q: got %v, want errno %v", rel, tt.line, err, tt.errno)
				continue
			}
			got := ""
			if l := we.Last(); l != nil {
				got = l.Msg
			}
			if got != tt.msg {
				t.Errorf("%s: %q: logged %q, want %q", rel, tt.line, got, tt.msg)
			}
		}
	}
}

// Truncating a control file removes its own kind only; on dynamic_events
// an event probe attached to an earlier synthetic event stops the removal
// at the synthetic event, every time (the references are not seen by the
// busy pass).
func TestTruncateScopesAndReferences(t *testing.T) {
	for _, rel := range []string{"6.1", "6.12"} {
		r := newRegistry(t, rel)
		r.SetPathLookup(fakeFS(t))
		for _, w := range []struct {
			f    File
			line string
		}{
			{KprobeEvents, "p:k vfs_read"},
			{UprobeEvents, "p:u /bin/prog:0x10"},
			{SyntheticEvents, "syn u64 a"},
			{DynamicEvents, "e:ep synthetic.syn $a"},
		} {
			if err := r.Exec(w.f, w.line); err != nil {
				t.Fatalf("%s: %q: %v", rel, w.line, err)
			}
		}
		if err := r.Truncate(UprobeEvents); err != nil {
			t.Fatalf("%s: truncating uprobe_events: %v", rel, err)
		}
		if got := r.Readback(DynamicEvents); strings.Contains(got, "uprobes/") || !strings.Contains(got, "kprobes/k") {
			t.Errorf("%s: after uprobe_events truncation: %q", rel, got)
		}
		for i := 0; i < 2; i++ {
			if err := r.Truncate(DynamicEvents); !errors.Is(err, syscall.EBUSY) {
				t.Errorf("%s: truncating dynamic_events (%d): %v, want EBUSY", rel, i, err)
			}
		}
		want := "s:synthetic/syn\tu64 a\ne:eprobes/ep synthetic.syn arg1=$a\n"
		if got := r.Readback(DynamicEvents); got != want {
			t.Errorf("%s: after dynamic_events truncation: %q, want %q", rel, got, want)
		}
		if err := r.Exec(DynamicEvents, "-:ep"); err != nil {
			t.Fatalf("%s: -:ep: %v", rel, err)
		}
		if err := r.Truncate(DynamicEvents); err != nil || r.Readback(DynamicEvents) != "" {
			t.Errorf("%s: final truncation: %v, %q", rel, err, r.Readback(DynamicEvents))
		}
	}
}

// TestTruncateEnabledSynthetic: an enabled synthetic event is not busy in
// dyn_events_release_all's first pass (synth_event_is_busy looks at the
// hist actions' references only); freeing it fails, so the truncation
// removes the events before it, fails with EBUSY and keeps it and those
// after it. Measured on 6.1 and 6.12 (TestSynthLiveVM).
func TestTruncateEnabledSynthetic(t *testing.T) {
	for _, rel := range []string{"6.1", "6.12"} {
		r := newRegistry(t, rel)
		for _, l := range []string{"a u64 x", "b u64 y", "c u64 z"} {
			if err := r.Exec(SyntheticEvents, l); err != nil {
				t.Fatalf("%s: %q: %v", rel, l, err)
			}
		}
		if err := r.SetEnabled(r.Event("synthetic", "b"), true); err != nil {
			t.Fatal(err)
		}
		if err := r.Truncate(SyntheticEvents); !errors.Is(err, syscall.EBUSY) {
			t.Errorf("%s: truncating with b enabled: %v, want EBUSY", rel, err)
		}
		if got, want := r.Readback(SyntheticEvents), "b\tu64 y\nc\tu64 z\n"; got != want {
			t.Errorf("%s: left %q, want %q", rel, got, want)
		}
		r.SetGenerated("c", true)
		if err := r.Truncate(SyntheticEvents); !errors.Is(err, syscall.EBUSY) {
			t.Errorf("%s: truncating with c generated: %v, want EBUSY", rel, err)
		}
		if got, want := r.Readback(SyntheticEvents), "b\tu64 y\nc\tu64 z\n"; got != want {
			t.Errorf("%s: a generated event keeps every event, left %q, want %q", rel, got, want)
		}
	}
}
