package tracefs

import "io/fs"

// Owner is a file's owner and group as stat(2) reports them. The
// fs.FileInfo of every tracefs file carries its Owner in Sys().
type Owner struct{ UID, GID uint32 }

// MountOptions are tracefs's mount options (fs/tracefs/inode.c). A nil
// field is an option not given.
//
//   - uid= owns the root directory and, on 6.12 (whose tracefs takes every
//     inode's owner from the root directory's at each access), every file;
//     on 6.1 every other file stays root's.
//   - gid= is the group of every file and directory, on both releases.
//   - mode= is the root directory's permission bits (S_IALLUGO, 07777);
//     the default is 0700. The other files keep the modes the kernel
//     creates them with.
type MountOptions struct {
	UID, GID *uint32
	Mode     *uint32
}

// DefaultRootMode is the root directory's mode without mode=
// (TRACEFS_DEFAULT_MODE).
const DefaultRootMode = 0o700

// releasePerms are the permissions that differ between releases.
type releasePerms struct {
	// eventDir is the permission of events/ and the directories below it:
	// tracefs directories on 6.1 (drwxr-x---), eventfs ones on 6.12
	// (drwxr-xr-x).
	eventDir fs.FileMode
	// uidEverywhere: uid= owns every file (6.12), not only the root
	// directory (6.1).
	uidEverywhere bool
	// eventfs: the events/ tree is eventfs (6.12), where an event named
	// like a file of its group ("p:grp/enable") shadows that file: the
	// name resolves to the event's directory, and a listing shows the
	// name twice, both as directories. On 6.1's tracefs the directory is
	// not created (the event exists, its directory does not) and the file
	// stays.
	eventfs bool
}

// permsFor is keyed by the release names of knownTexts. Both were read
// from `ls -lan` in the pinned kernels (testdata/perms).
var permsFor = map[string]releasePerms{
	"6.1":  {eventDir: 0o750, uidEverywhere: false, eventfs: false},
	"6.12": {eventDir: 0o755, uidEverywhere: true, eventfs: true},
}

// File permissions are the same on both releases: TRACE_MODE_WRITE (0640)
// for the files that take writes, TRACE_MODE_READ (0440) for the others.
// trace_marker is write-only for owner and group (0220).
const (
	modeWrite  fs.FileMode = 0o640
	modeRead   fs.FileMode = 0o440
	modeMarker fs.FileMode = 0o220
)

// optionsDirMode is options/: a tracefs directory (0750) on both
// releases.
const optionsDirMode fs.FileMode = 0o750

// unixPerm turns the permission part of a Unix mode (07777) into an
// fs.FileMode.
func unixPerm(m uint32) fs.FileMode {
	fm := fs.FileMode(m & 0o777)
	if m&0o4000 != 0 {
		fm |= fs.ModeSetuid
	}
	if m&0o2000 != 0 {
		fm |= fs.ModeSetgid
	}
	if m&0o1000 != 0 {
		fm |= fs.ModeSticky
	}
	return fm
}

// dirMode is the mode of a directory node.
func (f *FS) dirMode(k nodeKind) fs.FileMode {
	if k == nRoot {
		return fs.ModeDir | f.rootPerm
	}
	if k == nOptions {
		return fs.ModeDir | optionsDirMode
	}
	if k == nInstances || k == nInstance {
		return fs.ModeDir | instanceDirMode
	}
	return fs.ModeDir | f.perms.eventDir
}

// owner is the owner and group of a node: the stand-in for root unless
// uid= or gid= says otherwise.
func (f *FS) owner(k nodeKind) Owner {
	o := f.root
	if f.mount.GID != nil {
		o.GID = *f.mount.GID
	}
	if f.mount.UID != nil && (k == nRoot || f.perms.uidEverywhere) {
		o.UID = *f.mount.UID
	}
	return o
}
