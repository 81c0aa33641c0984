package tracefs

import (
	"errors"
	"os"
	"strings"
	"syscall"
	"testing"
)

// TestInstances checks instances/ as 6.12 and 6.1 answered in the VM
// (tools/vmsh): mkdir and rmdir errnos, an instance's files, its own
// enable state and error_log, and an event enabled in an instance kept
// from removal until the instance goes.
func TestInstances(t *testing.T) {
	fsys := newRegistryFS(t)
	errnoOf := func(err error) syscall.Errno {
		var e syscall.Errno
		if errors.As(err, &e) {
			return e
		}
		return 0
	}
	mustErr := func(what string, err error, want syscall.Errno) {
		t.Helper()
		if got := errnoOf(err); got != want {
			t.Errorf("%s: %v, want %v", what, err, want)
		}
	}
	if err := fsys.Mkdir("instances/foo"); err != nil {
		t.Fatalf("mkdir instances/foo: %v", err)
	}
	mustErr("mkdir again", fsys.Mkdir("instances/foo"), syscall.EEXIST)
	mustErr("mkdir instances/a/b", fsys.Mkdir("instances/a/b"), syscall.ENOENT)
	mustErr("mkdir instances/foo/x", fsys.Mkdir("instances/foo/x"), syscall.EPERM)
	mustErr("mkdir events/x", fsys.Mkdir("events/x"), syscall.EPERM)
	mustErr("rmdir events", fsys.Rmdir("events"), syscall.EPERM)
	mustErr("rmdir instances/nosuch", fsys.Rmdir("instances/nosuch"), syscall.ENOENT)
	mustErr("rmdir instances/foo/events", fsys.Rmdir("instances/foo/events"), syscall.EPERM)
	mustErr("rmdir a file", fsys.Rmdir("instances/foo/trace"), syscall.ENOTDIR)

	ents, err := fsys.ReadDir("instances/foo")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	want := "available_tracers buffer_size_kb buffer_subbuf_size_kb buffer_total_size_kb current_tracer error_log events options set_event set_event_notrace_pid set_event_pid snapshot trace trace_clock trace_marker trace_options trace_pipe tracing_cpumask tracing_on"
	if got := strings.Join(names, " "); got != want {
		t.Errorf("instance files:\n got %s\nwant %s", got, want)
	}
	fi, err := fsys.Stat("instances/foo")
	if err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o750 {
		t.Errorf("stat instances/foo: %v %v", fi, err)
	}
	if _, err := fsys.Stat("instances/foo/options/record-cmd"); errnoOf(err) != syscall.ENOENT {
		t.Errorf("an instance has the top-level-only option record-cmd: %v", err)
	}

	if err := writeFile(fsys, "kprobe_events", "p:kprobes/myp vfs_read", false); err != nil {
		t.Fatal(err)
	}
	if err := writeFile(fsys, "instances/foo/events/kprobes/myp/enable", "1", true); err != nil {
		t.Fatalf("enable in the instance: %v", err)
	}
	for file, want := range map[string]string{
		"instances/foo/events/kprobes/myp/enable": "1\n",
		"events/kprobes/myp/enable":               "0\n",
		"instances/foo/set_event":                 "kprobes:myp\n",
		"set_event":                               "",
	} {
		if got, err := fsys.ReadFile(file); err != nil || string(got) != want {
			t.Errorf("%s = %q (%v), want %q", file, got, err, want)
		}
	}
	mustErr("removing an event enabled in an instance", writeFile(fsys, "kprobe_events", "-:myp", false), syscall.EBUSY)

	mustErr("bad hist trigger", writeFile(fsys, "instances/foo/events/kprobes/myp/trigger", "hist:keys=nosuch", false), syscall.EINVAL)
	if log, _ := fsys.ReadFile("instances/foo/error_log"); !strings.Contains(string(log), "hist:kprobes:myp: error: Couldn't find field") {
		t.Errorf("instance error_log: %q", log)
	}
	if log, _ := fsys.ReadFile("error_log"); len(log) != 0 {
		t.Errorf("top-level error_log has the instance's error: %q", log)
	}

	h, err := fsys.Open("instances/foo/trace", os.O_RDONLY)
	if err != nil {
		t.Fatal(err)
	}
	mustErr("rmdir with a file open", fsys.Rmdir("instances/foo"), syscall.EBUSY)
	h.Close()
	if err := fsys.Rmdir("instances/foo"); err != nil {
		t.Fatalf("rmdir: %v", err)
	}
	if _, err := fsys.Stat("instances/foo/trace"); errnoOf(err) != syscall.ENOENT {
		t.Errorf("after rmdir: %v", err)
	}
	if err := writeFile(fsys, "kprobe_events", "-:myp", false); err != nil {
		t.Errorf("removing after the instance went: %v", err)
	}
}
