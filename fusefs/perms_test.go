package fusefs_test

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/ktrace-dev/ktrace/fusefs"
	"github.com/ktrace-dev/ktrace/internal/conformance"
	"github.com/ktrace-dev/ktrace/internal/vmtest"
	"github.com/ktrace-dev/ktrace/tracefs"
)

// goldenOptions turns a permission golden's options heading ("none",
// "uid=1000,gid=1000,mode=0750") into tracefs mount options.
func goldenOptions(t *testing.T, s string) tracefs.MountOptions {
	t.Helper()
	var o tracefs.MountOptions
	if s == "none" {
		return o
	}
	for _, kv := range strings.Split(s, ",") {
		k, v, _ := strings.Cut(kv, "=")
		base := 10
		if k == "mode" {
			base = 8
		}
		n, err := strconv.ParseUint(v, base, 32)
		if err != nil {
			t.Fatalf("options %q: %v", s, err)
		}
		x := uint32(n)
		switch k {
		case "uid":
			o.UID = &x
		case "gid":
			o.GID = &x
		case "mode":
			o.Mode = &x
		default:
			t.Fatalf("options %q: unknown option %s", s, k)
		}
	}
	return o
}

// goldenProbe is the definition capture.sh gives the event at
// events/GROUP/EVENT, and the file it writes it to.
func goldenProbe(group, event string) (file, line string) {
	switch {
	case event == "myret":
		return "kprobe_events", "r:" + group + "/" + event + " vfs_read\n"
	case group == "fprobes":
		return "dynamic_events", "f:" + event + " vfs_read\n"
	}
	return "kprobe_events", "p:" + group + "/" + event + " vfs_read\n"
}

// TestPermsMatchKernelsMount: through a real mount, every file and
// directory has the mode, owner and group of the pinned kernel's `ls -lan`
// (testdata/perms), without options and with uid=1000,gid=1000,mode=0750,
// the mounting user standing in for root. Directories have size 0 as on
// tracefs, trace_pipe one page and the other files their content's length
// (see "File sizes" in the package comment).
func TestPermsMatchKernelsMount(t *testing.T) {
	requireFUSE(t)
	root, err := vmtest.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	me := tracefs.Owner{UID: uint32(os.Geteuid()), GID: uint32(os.Getegid())}
	for _, k := range kernelNames {
		g, err := conformance.LoadPermGolden(root, k)
		if err != nil {
			t.Fatal(err)
		}
		for opts, listing := range g {
			t.Run(k+"/"+opts, func(t *testing.T) {
				w := newWorldOpts(t, k, tracefs.Options{Root: me, Mount: goldenOptions(t, opts)})
				mnt, _ := mountWorld(t, w, fusefs.Options{})
				for dir := range listing {
					if p := strings.Split(dir, "/"); len(p) == 3 {
						file, line := goldenProbe(p[1], p[2])
						appendFile(t, filepath.Join(mnt, file), line)
					}
				}
				mapID := func(id, rootID uint32) uint32 {
					if id == 0 {
						return rootID
					}
					return id
				}
				check := func(p string, want conformance.PermEntry) {
					t.Helper()
					var st syscall.Stat_t
					if err := syscall.Lstat(p, &st); err != nil {
						t.Errorf("stat %s: %v", p, err)
						return
					}
					rel := strings.TrimPrefix(p, mnt)
					if got := conformance.LsMode(st.Mode); got != want.Mode {
						t.Errorf("%s: mode %s, kernel %s", rel, got, want.Mode)
					}
					if st.Uid != mapID(want.UID, me.UID) || st.Gid != mapID(want.GID, me.GID) {
						t.Errorf("%s: owner %d:%d, kernel %d:%d (0 being the mounting user)", rel, st.Uid, st.Gid, want.UID, want.GID)
					}
					var size int64
					switch {
					case st.Mode&syscall.S_IFMT == syscall.S_IFDIR:
						size = want.Size
					case filepath.Base(p) == "trace_pipe":
						size = 4096
					default:
						b, err := os.ReadFile(p)
						if err != nil {
							t.Errorf("read %s: %v", rel, err)
						}
						size = int64(len(b))
					}
					if st.Size != size {
						t.Errorf("%s: size %d, want %d", rel, st.Size, size)
					}
				}
				for dir, ents := range listing {
					d := filepath.Join(mnt, dir)
					check(d, ents["."])
					des, err := os.ReadDir(d)
					if err != nil {
						t.Fatal(err)
					}
					for _, de := range des {
						want, ok := ents[de.Name()]
						if !ok {
							t.Errorf("%s/%s is not in the kernel's listing", dir, de.Name())
							continue
						}
						check(filepath.Join(d, de.Name()), want)
					}
				}
			})
		}
	}
}

// The users of the access tests: nobody and another unprivileged user
// outside nobody's group.
const (
	nobodyID = 65534
	otherID  = 65533
)

// accessScript tries each operation in the mount ($0) and prints
// "NAME=STATUS ERROR" for each.
const accessScript = `cd "$0" || exit 125
try() { name=$1; shift; err=$( (eval "$*") 2>&1 >/dev/null ); echo "$name=$? $err"; }
try ls 'ls .'
try readme 'cat README'
try read_kprobe_events 'cat kprobe_events'
try add 'echo "p:byuser vfs_write" >> kprobe_events'
try add_dynamic 'echo "p:byuser2 vfs_write" >> dynamic_events'
try enable 'echo 1 > events/kprobes/myev/enable'
try filter 'echo "common_pid == 1" > events/kprobes/myev/filter'
try trigger 'echo traceoff > events/kprobes/myev/trigger'
try format 'cat events/kprobes/myev/format'
try clear_trace 'echo > trace'
try write_readme 'echo x > README'
`

// Outcomes of an operation in the access tests.
const (
	allowed = "ok"
	eacces  = "EACCES"
	refused = "refused" // fails, with another errno than EACCES
)

// accessResult is one operation's exit status and error text.
type accessResult struct {
	status int
	err    string
}

func (r accessResult) outcome() string {
	switch {
	case r.status == 0:
		return allowed
	case strings.Contains(r.err, "Permission denied"):
		return eacces
	}
	return refused
}

// tryAccess runs accessScript on mnt as uid:gid.
func tryAccess(t *testing.T, mnt string, uid, gid uint32) map[string]accessResult {
	t.Helper()
	cmd := exec.Command("/bin/sh", "-c", accessScript, mnt)
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: gid}}
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("running as %d:%d: %v", uid, gid, err)
	}
	res := map[string]accessResult{}
	for _, l := range strings.Split(string(out), "\n") {
		name, rest, ok := strings.Cut(l, "=")
		if !ok {
			continue
		}
		v, msg, _ := strings.Cut(rest, " ")
		n, err := strconv.Atoi(v)
		if err != nil {
			continue
		}
		res[name] = accessResult{n, msg}
	}
	if len(res) == 0 {
		t.Fatalf("as %d:%d: no result (%v):\n%s", uid, gid, err, out)
	}
	return res
}

// expectAccess compares the outcomes of tryAccess with want.
func expectAccess(t *testing.T, who string, got map[string]accessResult, want map[string]string) {
	t.Helper()
	for op, w := range want {
		r, ok := got[op]
		if !ok {
			t.Errorf("%s: %s did not run", who, op)
			continue
		}
		if o := r.outcome(); o != w {
			t.Errorf("%s: %s: %s (status %d: %s), want %s", who, op, o, r.status, r.err, w)
		}
	}
}

// asUser runs a shell command as uid:gid with $0 set to arg.
func asUser(uid, gid uint32, script, arg string) ([]byte, error) {
	cmd := exec.Command("/bin/sh", "-c", script, arg)
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: gid}}
	return cmd.CombinedOutput()
}

// openWay lets other users reach mnt: the test's temporary directory is
// root's alone.
func openWay(t *testing.T, mnt string) {
	t.Helper()
	if err := os.Chmod(filepath.Dir(mnt), 0o755); err != nil {
		t.Fatal(err)
	}
}

// TestOtherUsers: with allow_other, another user gets what tracefs's modes
// give them and nothing more. Without options nothing: listing the root,
// reading README and writing kprobe_events fail with EACCES. With gid= of
// the user's group and mode=0750 the group reads README, kprobe_events and
// format files but gets EACCES defining a probe, enabling an event,
// setting a filter or trigger and clearing trace. The mount's owner (here
// root) works as before; a non-root owner works within the owner bits, as
// a non-root uid= on tracefs does (EACCES writing README).
func TestOtherUsers(t *testing.T) {
	requireFUSE(t)
	me := tracefs.Owner{UID: uint32(os.Geteuid()), GID: uint32(os.Getegid())}
	gid := uint32(nobodyID)
	mode := uint32(0o750)
	for _, k := range kernelNames {
		t.Run(k+"/no-options", func(t *testing.T) {
			w := newWorldOpts(t, k, tracefs.Options{Root: me})
			mnt, _ := mountWorld(t, w, fusefs.Options{AllowOther: true})
			openWay(t, mnt)
			appendFile(t, filepath.Join(mnt, "kprobe_events"), "p:myev vfs_read\n")
			for _, c := range []struct{ what, script string }{
				{"ls", `ls "$0"`},
				{"add", `echo 'p:byuser vfs_write' >> "$0/kprobe_events"`},
				{"read", `cat "$0/README"`},
				{"enable", `echo 1 > "$0/events/kprobes/myev/enable"`},
			} {
				out, err := asUser(nobodyID, nobodyID, c.script, mnt)
				if err == nil || !strings.Contains(string(out), "Permission denied") {
					t.Errorf("nobody: %s: %v, want EACCES:\n%s", c.what, err, out)
				}
			}
			if w.reg.Event("kprobes", "byuser") != nil || w.reg.Event("kprobes", "myev").Enabled {
				t.Errorf("nobody changed the events")
			}
			got := tryAccess(t, mnt, me.UID, me.GID)
			expectAccess(t, "owner", got, map[string]string{
				"ls": allowed, "readme": allowed, "read_kprobe_events": allowed,
				"add": allowed, "add_dynamic": allowed, "enable": allowed,
				"filter": allowed, "format": allowed, "clear_trace": allowed,
				// As root on tracefs: the open succeeds, the write fails
				// (EINVAL).
				"write_readme": refused,
			})
			if w.reg.Event("kprobes", "byuser") == nil || !w.reg.Event("kprobes", "myev").Enabled {
				t.Errorf("the owner's probe or enable did not take")
			}
		})
		t.Run(k+"/gid-mode", func(t *testing.T) {
			w := newWorldOpts(t, k, tracefs.Options{Root: me, Mount: tracefs.MountOptions{GID: &gid, Mode: &mode}})
			mnt, _ := mountWorld(t, w, fusefs.Options{AllowOther: true})
			openWay(t, mnt)
			appendFile(t, filepath.Join(mnt, "kprobe_events"), "p:myev vfs_read\n")
			got := tryAccess(t, mnt, nobodyID, nobodyID)
			expectAccess(t, fmt.Sprintf("nobody (group %d)", gid), got, map[string]string{
				"ls": allowed, "readme": allowed, "read_kprobe_events": allowed, "format": allowed,
				"add": eacces, "add_dynamic": eacces, "enable": eacces, "filter": eacces,
				"trigger": eacces, "clear_trace": eacces, "write_readme": eacces,
			})
			if evs := w.reg.Events(); len(evs) != 1 || evs[0].Enabled {
				t.Errorf("the group member changed the events: %v", evs)
			}
			if out, err := asUser(otherID, otherID, `ls "$0"`, mnt); err == nil || !strings.Contains(string(out), "Permission denied") {
				t.Errorf("uid %d outside the group: ls: %v, want EACCES:\n%s", otherID, err, out)
			}
		})
		t.Run(k+"/non-root-owner", func(t *testing.T) {
			// nobody is the mounting user; root serves the connection
			// here, so allow_other lets nobody in.
			w := newWorldOpts(t, k, tracefs.Options{Root: tracefs.Owner{UID: nobodyID, GID: nobodyID}})
			mnt, _ := mountWorld(t, w, fusefs.Options{AllowOther: true})
			openWay(t, mnt)
			appendFile(t, filepath.Join(mnt, "kprobe_events"), "p:myev vfs_read\n")
			got := tryAccess(t, mnt, nobodyID, nobodyID)
			expectAccess(t, "owner nobody", got, map[string]string{
				"ls": allowed, "readme": allowed, "read_kprobe_events": allowed,
				"add": allowed, "add_dynamic": allowed, "enable": allowed,
				"filter": allowed, "format": allowed, "clear_trace": allowed,
				"write_readme": eacces,
			})
			if w.reg.Event("kprobes", "byuser") == nil || !w.reg.Event("kprobes", "myev").Enabled {
				t.Errorf("the owner's probe or enable did not take: %v", w.reg.Events())
			}
			if out, err := asUser(otherID, otherID, `ls "$0"`, mnt); err == nil || !strings.Contains(string(out), "Permission denied") {
				t.Errorf("uid %d: ls of nobody's mount: %v, want EACCES:\n%s", otherID, err, out)
			}
		})
	}
}

// TestSendfileReaders: readers that copy with sendfile(2), busybox cat and
// Python's shutil.copyfile, get a file's whole text through the mount (the
// reason regular files report their content's length, not tracefs's 0).
func TestSendfileReaders(t *testing.T) {
	requireFUSE(t)
	w := newWorld(t, "6.12")
	mnt, _ := mountWorld(t, w, fusefs.Options{})
	want, err := w.fs.ReadFile("README")
	if err != nil {
		t.Fatal(err)
	}
	readers := map[string][]string{}
	if p, err := exec.LookPath("busybox"); err == nil {
		readers["busybox cat"] = []string{p, "cat"}
	}
	if p, err := exec.LookPath("python3"); err == nil {
		readers["shutil.copyfile"] = []string{p, "-c", "import shutil, sys, tempfile\nwith tempfile.NamedTemporaryFile() as f:\n shutil.copyfile(sys.argv[1], f.name)\n sys.stdout.write(open(f.name).read())"}
	}
	if len(readers) == 0 {
		t.Skip("neither busybox nor python3 installed")
	}
	for name, argv := range readers {
		cmd := exec.Command(argv[0], append(argv[1:], filepath.Join(mnt, "README"))...)
		cmd.Dir = "/"
		got, err := cmd.Output()
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if string(got) != string(want) {
			t.Errorf("%s read %d bytes of README, want %d", name, len(got), len(want))
		}
	}
}

// TestMountCommandAccess: `ktrace mount --allow-other` alone lets another
// user do nothing; with --gid of the user's group and --mode 0750 the user
// reads but cannot define, enable or filter, and the root directory is
// drwxr-x--- in that group. The flags reach the tree as tracefs's options.
func TestMountCommandAccess(t *testing.T) {
	requireFUSE(t)
	bin := ktraceBinary(t)
	kdir := snapshotDir(t, "6.12")
	t.Run("allow-other", func(t *testing.T) {
		dir := t.TempDir()
		openWay(t, dir)
		cmd, out := startMount(t, bin, kdir, dir, "--allow-other")
		defer func() { cmd.Process.Signal(syscall.SIGTERM); cmd.Wait() }()
		appendFile(t, filepath.Join(dir, "kprobe_events"), "p:myev vfs_read\n")
		for _, script := range []string{`ls "$0"`, `echo 'p:byuser vfs_write' >> "$0/kprobe_events"`} {
			if o, err := asUser(nobodyID, nobodyID, script, dir); err == nil || !strings.Contains(string(o), "Permission denied") {
				t.Errorf("nobody: %s: %v, want EACCES:\n%s", script, err, o)
			}
		}
		if b, err := os.ReadFile(filepath.Join(dir, "kprobe_events")); err != nil || strings.Contains(string(b), "byuser") {
			t.Errorf("kprobe_events = %q, %v", b, err)
		}
		if strings.Contains(out.String(), "note:") {
			t.Errorf("a note without access options: %s", out)
		}
	})
	t.Run("gid-mode", func(t *testing.T) {
		dir := t.TempDir()
		openWay(t, dir)
		cmd, out := startMount(t, bin, kdir, dir, "--allow-other", "--gid", strconv.Itoa(nobodyID), "--mode", "0750")
		defer func() { cmd.Process.Signal(syscall.SIGTERM); cmd.Wait() }()
		appendFile(t, filepath.Join(dir, "kprobe_events"), "p:myev vfs_read\n")
		var st syscall.Stat_t
		if err := syscall.Stat(dir, &st); err != nil || conformance.LsMode(st.Mode) != "drwxr-x---" || st.Gid != nobodyID || st.Uid != uint32(os.Geteuid()) {
			t.Errorf("root directory %s %d:%d (%v), want drwxr-x--- %d:%d", conformance.LsMode(st.Mode), st.Uid, st.Gid, err, os.Geteuid(), nobodyID)
		}
		got := tryAccess(t, dir, nobodyID, nobodyID)
		expectAccess(t, "nobody", got, map[string]string{
			"ls": allowed, "readme": allowed, "read_kprobe_events": allowed, "format": allowed,
			"add": eacces, "add_dynamic": eacces, "enable": eacces, "filter": eacces, "trigger": eacces,
		})
		if o, err := asUser(otherID, otherID, `ls "$0"`, dir); err == nil || !strings.Contains(string(o), "Permission denied") {
			t.Errorf("uid %d: ls: %v, want EACCES:\n%s", otherID, err, o)
		}
		t.Logf("ktrace mount said:\n%s", out)
	})
}
