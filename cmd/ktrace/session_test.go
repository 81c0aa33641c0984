package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ktrace-dev/ktrace/session"
)

// ktraceProc is `ktrace ARGS` as its own process: the test binary, which
// runs ktrace when its argv[0] is "ktrace" (TestMain).
func ktraceProc(args ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0])
	cmd.Args = append([]string{"ktrace"}, args...)
	cmd.Env = append(os.Environ(), "KTRACE_KERNEL=embedded")
	return cmd
}

// procResult is one process's exit code and combined output.
type procResult struct {
	args []string
	code int
	out  string
}

// runTogether starts every command line as its own process at once and
// waits for them all.
func runTogether(t *testing.T, lines [][]string) []procResult {
	t.Helper()
	res := make([]procResult, len(lines))
	var start, done sync.WaitGroup
	start.Add(1)
	for i, args := range lines {
		done.Add(1)
		go func() {
			defer done.Done()
			cmd := ktraceProc(args...)
			start.Wait()
			out, err := cmd.CombinedOutput()
			code := 0
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			} else if err != nil {
				code = -1
				out = append(out, err.Error()...)
			}
			res[i] = procResult{args, code, string(out)}
		}()
	}
	start.Done()
	done.Wait()
	return res
}

// sessionEvents lists the session's events ("GROUP/EVENT" plus " enabled")
// through `ktrace ls`.
func sessionEvents(t *testing.T, session string) []string {
	t.Helper()
	out, err := ktraceProc("--session", session, "ls").CombinedOutput()
	if err != nil {
		t.Fatalf("ktrace ls: %v\n%s", err, out)
	}
	var evs []string
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if l == "" {
			continue
		}
		head, _, _ := strings.Cut(l, " ")
		_, name, _ := strings.Cut(head, ":")
		if strings.HasSuffix(l, "# enabled") {
			name += " enabled"
		}
		evs = append(evs, name)
	}
	sort.Strings(evs)
	return evs
}

// noTempFiles fails if anything but the session and its lock is left in
// dir.
func noTempFiles(t *testing.T, dir string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if n := e.Name(); n != "session" && n != "session.lock" {
			t.Errorf("left in the session directory: %s", n)
		}
	}
}

func mustAllSucceed(t *testing.T, res []procResult) {
	t.Helper()
	for _, r := range res {
		if r.code != 0 {
			t.Errorf("ktrace %s: exit %d\n%s", strings.Join(r.args, " "), r.code, r.out)
		}
	}
}

// TestSessionConcurrentAdds: ten `ktrace add` processes at once on one
// session keep ten events, and leave no temporary file.
func TestSessionConcurrentAdds(t *testing.T) {
	if testing.Short() {
		t.Skip("starts many processes")
	}
	dir := t.TempDir()
	s := filepath.Join(dir, "session")
	var lines [][]string
	var want []string
	for i := 0; i < 10; i++ {
		lines = append(lines, []string{"--session", s, "add", fmt.Sprintf("p:e%d vfs_read", i)})
		want = append(want, fmt.Sprintf("kprobes/e%d", i))
	}
	mustAllSucceed(t, runTogether(t, lines))
	sort.Strings(want)
	if got := sessionEvents(t, s); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("events after ten concurrent adds:\n%v\nwant\n%v", got, want)
	}
	noTempFiles(t, dir)
}

// TestSessionConcurrentMixed: concurrent add, rm, enable and disable of
// different events all land.
func TestSessionConcurrentMixed(t *testing.T) {
	if testing.Short() {
		t.Skip("starts many processes")
	}
	dir := t.TempDir()
	s := filepath.Join(dir, "session")
	setup := []string{"--session", s, "add"}
	for i := 0; i < 12; i++ {
		setup = append(setup, fmt.Sprintf("p:e%d vfs_read", i))
	}
	if out, err := ktraceProc(setup...).CombinedOutput(); err != nil {
		t.Fatalf("setup: %v\n%s", err, out)
	}
	if out, err := ktraceProc("--session", s, "enable", "e10", "e11").CombinedOutput(); err != nil {
		t.Fatalf("setup: %v\n%s", err, out)
	}
	var lines [][]string
	var want []string
	for i := 0; i < 4; i++ {
		lines = append(lines,
			[]string{"--session", s, "enable", fmt.Sprintf("kprobes/e%d", i)},
			[]string{"--session", s, "rm", fmt.Sprintf("kprobes/e%d", i+4)},
			[]string{"--session", s, "add", fmt.Sprintf("p:f%d vfs_write", i)})
		want = append(want, fmt.Sprintf("kprobes/e%d enabled", i), fmt.Sprintf("kprobes/f%d", i))
	}
	lines = append(lines, []string{"--session", s, "disable", "e10"})
	want = append(want, "kprobes/e8", "kprobes/e9", "kprobes/e10", "kprobes/e11 enabled")
	mustAllSucceed(t, runTogether(t, lines))
	sort.Strings(want)
	if got := sessionEvents(t, s); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("events after concurrent add/rm/enable/disable:\n%v\nwant\n%v", got, want)
	}
	noTempFiles(t, dir)
}

// TestSessionConcurrentConflicts: when concurrent verbs conflict, each
// either lands whole or fails with the kernel's reason. Eight adds of one
// event: one lands, seven fail with EEXIST. An enable and an rm of one
// event: whichever runs first lands, the other fails (EBUSY, or no such
// event), and the session agrees.
func TestSessionConcurrentConflicts(t *testing.T) {
	if testing.Short() {
		t.Skip("starts many processes")
	}
	dir := t.TempDir()
	s := filepath.Join(dir, "session")
	var lines [][]string
	for i := 0; i < 8; i++ {
		lines = append(lines, []string{"--session", s, "add", "p:dup vfs_read", fmt.Sprintf("p:x%d vfs_read", i)})
	}
	ok := 0
	for _, r := range runTogether(t, lines) {
		switch {
		case r.code == 0:
			ok++
		case r.code == 1 && strings.Contains(r.out, "(EEXIST); nothing added"):
		default:
			t.Errorf("ktrace %s: exit %d, want 0 or EEXIST:\n%s", strings.Join(r.args, " "), r.code, r.out)
		}
	}
	got := sessionEvents(t, s)
	if ok != 1 || len(got) != 2 || got[0] != "kprobes/dup" {
		t.Errorf("%d of 8 adds of dup landed, session %v; want 1 and dup with one x", ok, got)
	}

	for round := 0; round < 3; round++ {
		ev := fmt.Sprintf("kprobes/c%d", round)
		if out, err := ktraceProc("--session", s, "add", "p:"+ev+" vfs_read").CombinedOutput(); err != nil {
			t.Fatalf("add %s: %v\n%s", ev, err, out)
		}
		res := runTogether(t, [][]string{{"--session", s, "enable", ev}, {"--session", s, "rm", ev}})
		en, rm := res[0], res[1]
		has := false
		for _, e := range sessionEvents(t, s) {
			if strings.HasPrefix(e, ev) {
				has = true
				if e != ev+" enabled" {
					t.Errorf("%s is in the session but not enabled: %s", ev, e)
				}
			}
		}
		switch {
		case en.code == 0 && rm.code == 1 && strings.Contains(rm.out, "event is enabled (EBUSY)"):
			if !has {
				t.Errorf("enable won, but %s is gone", ev)
			}
		case rm.code == 0 && en.code == 1 && strings.Contains(en.out, "no event "+ev):
			if has {
				t.Errorf("rm won, but %s is still there", ev)
			}
		default:
			t.Errorf("enable and rm of %s: exit %d and %d, want one to land and the other to fail clearly:\n%s\n%s", ev, en.code, rm.code, en.out, rm.out)
		}
		runTogether(t, [][]string{{"--session", s, "disable", ev}})
		runTogether(t, [][]string{{"--session", s, "rm", ev}})
	}
	noTempFiles(t, dir)
}

// TestSessionLockBusy: a verb that cannot get the session's lock in time
// fails saying so, and changes nothing.
func TestSessionLockBusy(t *testing.T) {
	dir := t.TempDir()
	s := filepath.Join(dir, "session")
	f, err := os.OpenFile(s+".lock", os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	old := session.LockWait
	session.LockWait = 200 * time.Millisecond
	defer func() { session.LockWait = old }()
	var stdout, stderr strings.Builder
	code := run([]string{"--kernel", "embedded", "--session", s, "add", "p:ev vfs_read"}, strings.NewReader(""), &stdout, &stderr)
	if code != exitRejected || !strings.Contains(stderr.String(), "is in use: another ktrace has held "+s+".lock") {
		t.Errorf("add on a locked session: exit %d, stderr %q", code, stderr.String())
	}
	if _, err := os.Stat(s); !os.IsNotExist(err) {
		t.Errorf("the session was written: %v", err)
	}
	// Reading needs no lock.
	code = run([]string{"--kernel", "embedded", "--session", s, "ls"}, strings.NewReader(""), &stdout, &stderr)
	if code != 0 {
		t.Errorf("ls on a locked session: exit %d: %s", code, stderr.String())
	}
}
