package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestMountSession mounts with --session through FUSE: the mount starts
// with the session's events, takes a line written to its kprobe_events,
// and saves both back to the session when it is unmounted (SIGTERM).
// Needs /dev/fuse and root (or fusermount).
func TestMountSession(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	if _, err := os.Stat("/dev/fuse"); err != nil {
		t.Skipf("no FUSE: %v", err)
	}
	if os.Geteuid() != 0 {
		if _, err := exec.LookPath("fusermount3"); err != nil {
			if _, err := exec.LookPath("fusermount"); err != nil {
				t.Skip("neither root nor fusermount")
			}
		}
	}
	dir := t.TempDir()
	mnt := filepath.Join(dir, "tracing")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	sess := filepath.Join(dir, "s.session")
	ktrace := func(args ...string) (string, error) {
		c := exec.Command(os.Args[0], args...)
		c.Env = append(os.Environ(), benchExecEnv+"=1", "KTRACE_KERNEL=embedded")
		out, err := c.Output()
		if ee, ok := err.(*exec.ExitError); ok {
			t.Logf("ktrace %q: %s", args, ee.Stderr)
		}
		return string(out), err
	}
	if _, err := ktrace("--session", sess, "add", "p:m1 vfs_read"); err != nil {
		t.Fatal(err)
	}
	out, err := ktrace("--session", sess, "mount", "--daemon", mnt)
	if err != nil {
		t.Skipf("mount: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(out))
	if err != nil {
		t.Fatalf("mount printed %q", out)
	}
	unmounted := false
	defer func() {
		if !unmounted {
			syscall.Kill(pid, syscall.SIGTERM)
			exec.Command("umount", "-l", mnt).Run()
		}
	}()
	got, err := os.ReadFile(filepath.Join(mnt, "kprobe_events"))
	if err != nil || string(got) != "p:kprobes/m1 vfs_read\n" {
		t.Fatalf("kprobe_events on the mount: %q, %v", got, err)
	}
	f, err := os.OpenFile(filepath.Join(mnt, "kprobe_events"), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte("p:m2 vfs_write\n")); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	for i := 0; ; i++ {
		if syscall.Kill(pid, 0) != nil {
			break
		}
		if i > 100 {
			t.Fatal("mount server did not exit")
		}
		time.Sleep(50 * time.Millisecond)
	}
	unmounted = true
	ls, err := ktrace("--session", sess, "ls")
	if err != nil {
		t.Fatal(err)
	}
	if ls != "p:kprobes/m1 vfs_read\np:kprobes/m2 vfs_write\n" {
		t.Errorf("session after the mount: %q", ls)
	}
}
