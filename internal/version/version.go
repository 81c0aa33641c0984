package version

import "runtime/debug"

// String is the module version, the VCS revision (with its time, and
// "(modified)" for a dirty tree) and the Go version of this build.
func String() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown (no build information)"
	}
	return of(bi)
}

func of(bi *debug.BuildInfo) string {
	v := bi.Main.Version
	if v == "" {
		v = "(devel)"
	}
	var rev, when, dirty string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			when = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = " (modified)"
			}
		}
	}
	out := v
	if rev != "" {
		out += ", revision " + rev + dirty
		if when != "" {
			out += " from " + when
		}
	} else {
		out += ", no VCS revision recorded"
	}
	return out + ", " + bi.GoVersion
}
