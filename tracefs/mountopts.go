package tracefs

import (
	"errors"
	"fmt"
	"os/user"
	"strconv"
)

// ParseMountOptions reads tracefs's mount options uid=, gid= and mode= as
// ktrace mount's --uid, --gid and --mode give them: a uid or user name, a
// gid or group name, an octal mode of at most 07777. A nil argument is an
// option not given.
func ParseMountOptions(uid, gid, mode *string) (MountOptions, error) {
	var o MountOptions
	if uid != nil {
		v, err := lookupID(*uid, func(name string) (string, error) {
			u, err := user.Lookup(name)
			if err != nil {
				return "", err
			}
			return u.Uid, nil
		})
		if err != nil {
			return o, fmt.Errorf("uid %s: %w", *uid, err)
		}
		o.UID = &v
	}
	if gid != nil {
		v, err := lookupID(*gid, func(name string) (string, error) {
			g, err := user.LookupGroup(name)
			if err != nil {
				return "", err
			}
			return g.Gid, nil
		})
		if err != nil {
			return o, fmt.Errorf("gid %s: %w", *gid, err)
		}
		o.GID = &v
	}
	if mode != nil {
		v, err := strconv.ParseUint(*mode, 8, 32)
		if err != nil || v > 0o7777 {
			return o, fmt.Errorf("mode %s: not an octal mode of at most 07777", *mode)
		}
		m := uint32(v)
		o.Mode = &m
	}
	return o, nil
}

// lookupID parses a numeric id or looks a name up. (uid_t)-1 is no id.
func lookupID(s string, lookup func(string) (string, error)) (uint32, error) {
	if s == "" {
		return 0, errors.New("empty")
	}
	if s[0] < '0' || s[0] > '9' {
		id, err := lookup(s)
		if err != nil {
			return 0, err
		}
		s = id
	}
	v, err := strconv.ParseUint(s, 10, 32)
	if err != nil || v == 1<<32-1 {
		return 0, fmt.Errorf("not an id or a known name")
	}
	return uint32(v), nil
}

// GrantsOthers reports whether the options give a user other than root
// (the mounting user) access: another owner, or group or other bits on
// the root directory.
func (o MountOptions) GrantsOthers(root Owner) bool {
	return (o.UID != nil && *o.UID != root.UID) || (o.Mode != nil && *o.Mode&0o077 != 0)
}

// AccessWarnings says who besides root (the mounting user) can define
// and enable probes in fsys (the owner of kprobe_events, if another user)
// and who can read what they record (the group, when the root directory
// lets it in).
func AccessWarnings(fsys *FS, root Owner) []string {
	var out []string
	if fi, err := fsys.Stat("kprobe_events"); err == nil {
		if o, ok := fi.Sys().(Owner); ok && o.UID != root.UID {
			out = append(out, fmt.Sprintf("uid %d can define and enable them", o.UID))
		}
	}
	dir, err := fsys.Stat(".")
	if err != nil {
		return out
	}
	if o, ok := dir.Sys().(Owner); ok && dir.Mode().Perm()&0o050 == 0o050 {
		out = append(out, fmt.Sprintf("group %d can read what they record (trace, trace_pipe) and the definitions", o.GID))
	}
	return out
}
