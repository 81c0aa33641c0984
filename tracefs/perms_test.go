package tracefs

import (
	"io/fs"
	"path"
	"strconv"
	"strings"
	"testing"

	"github.com/ktrace-dev/ktrace/internal/conformance"
)

// permOptions turns a golden's options heading ("none",
// "uid=1000,gid=1000,mode=0750") into MountOptions.
func permOptions(t *testing.T, s string) MountOptions {
	t.Helper()
	var o MountOptions
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
			t.Fatalf("options %q: unknown %s", s, k)
		}
	}
	return o
}

// lsMode is the ls -l text of an fs.FileMode.
func lsMode(m fs.FileMode) string {
	u := uint32(m.Perm())
	if m.IsDir() {
		u |= 0o040000
	}
	if m&fs.ModeSetuid != 0 {
		u |= 0o4000
	}
	if m&fs.ModeSetgid != 0 {
		u |= 0o2000
	}
	if m&fs.ModeSticky != 0 {
		u |= 0o1000
	}
	return conformance.LsMode(u)
}

// TestPermsMatchKernels: every file and directory of the emulated tree has
// the mode, owner, group and size (0) of the pinned kernel's `ls -lan`
// (testdata/perms), with and without mount options, and with the tree's
// root standing in for the kernel's root.
func TestPermsMatchKernels(t *testing.T) {
	for _, k := range []struct {
		name         string
		major, minor int
	}{{"6.1", 6, 1}, {"6.12", 6, 12}} {
		g, err := conformance.LoadPermGolden("..", k.name)
		if err != nil {
			t.Fatal(err)
		}
		if len(g) != 2 {
			t.Fatalf("%s: golden has %d option sets, want 2", k.name, len(g))
		}
		for opts, listing := range g {
			for _, root := range []Owner{{0, 0}, {1234, 5678}} {
				b := &fakeBackend{}
				fsys := New(b, Options{Major: k.major, Minor: k.minor, Root: root, Mount: permOptions(t, opts)})
				// The events the golden lists.
				for dir := range listing {
					if p := strings.Split(dir, "/"); len(p) == 3 {
						if err := writeFile(fsys, "kprobe_events", p[1]+"/"+p[2]+"\n", false); err != nil {
							t.Fatal(err)
						}
					}
				}
				// A golden uid or gid 0 is root, whom root stands in for.
				mapID := func(id, rootID uint32) uint32 {
					if id == 0 {
						return rootID
					}
					return id
				}
				check := func(where string, fi fs.FileInfo, want conformance.PermEntry) {
					t.Helper()
					o, _ := fi.Sys().(Owner)
					if got := lsMode(fi.Mode()); got != want.Mode {
						t.Errorf("%s %s (%s): mode %s, kernel %s", k.name, where, opts, got, want.Mode)
					}
					if o.UID != mapID(want.UID, root.UID) || o.GID != mapID(want.GID, root.GID) {
						t.Errorf("%s %s (%s, root %v): owner %d:%d, kernel %d:%d", k.name, where, opts, root, o.UID, o.GID, want.UID, want.GID)
					}
					if fi.Size() != want.Size {
						t.Errorf("%s %s: size %d, kernel %d", k.name, where, fi.Size(), want.Size)
					}
				}
				for dir, ents := range listing {
					fi, err := fsys.Stat(dir)
					if err != nil {
						t.Errorf("%s: stat %q: %v", k.name, dir, err)
						continue
					}
					check(path.Join("/", dir), fi, ents["."])
					des, err := fsys.ReadDir(dir)
					if err != nil {
						t.Fatal(err)
					}
					for _, de := range des {
						want, ok := ents[de.Name()]
						if !ok {
							t.Errorf("%s: %s/%s is not in the kernel's listing", k.name, dir, de.Name())
							continue
						}
						info, err := de.Info()
						if err != nil {
							t.Fatal(err)
						}
						check(path.Join("/", dir, de.Name()), info, want)
					}
				}
			}
		}
	}
}
