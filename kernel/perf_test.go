package kernel

import (
	"path"
	"testing"
)

// ftraceMatchScan is the definition FtraceMatch's indexed search must agree
// with: path.Match of the glob against every available_filter_functions
// entry of the same module ("" for bare names), compared literally.
func ftraceMatchScan(m *Model, pattern string) bool {
	mod, glob := splitModSym(pattern)
	for name := range m.ftrace {
		nmod, nname := splitModSym(name)
		if nmod != mod {
			continue
		}
		if ok, err := path.Match(glob, nname); err == nil && ok {
			return true
		}
	}
	return false
}

// TestFtraceMatchIndexed checks the prefix-narrowed glob search against the
// full scan, on a small list with modules and on the embedded 6.12 model.
func TestFtraceMatchIndexed(t *testing.T) {
	small := &Model{ftrace: parseFilterFunctions([]byte(
		"vfs_read\nvfs_readv\nvfs_write\na*b\nsys_[x]\n" +
			"ext4_sync_fs [ext4]\next4_read [ext4]\nfoo:bar [m]\n"))}
	patterns := []string{
		"vfs_rea*", "vfs_rea?", "vfs_read*", "vfs_*", "*", "?fs_read", "*_read",
		"vfs_[rw]*", "vfs_[!r]*", "vfs_[", "vfs_[]", "[", "\\v*", "vfs\\_read*",
		"a\\*b", "a*b", "sys_\\[x]*", "nosuch*", "vfs_read[", "",
		"ext4:ext4_*", "ext4:*", "ext4:*_fs", "ext*:ext4_*", "ext4:vfs_*",
		"m:foo*", "foo:bar*", "ext4:", "ext4:[", ":vfs*", "nomod:*",
	}
	emb, err := Embedded()
	if err != nil {
		t.Fatal(err)
	}
	models := map[string]*Model{"small": small, "embedded 6.12": emb}
	for name, m := range models {
		for _, p := range patterns {
			if !containsGlob(p) {
				continue
			}
			if got, want := m.FtraceMatch(p), ftraceMatchScan(m, p); got != want {
				t.Errorf("%s: FtraceMatch(%q) = %v, full scan %v", name, p, got, want)
			}
		}
	}
}

func containsGlob(s string) bool {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '*', '?', '[':
			return true
		}
	}
	return false
}

// BenchmarkFtraceMatch measures a glob lookup with a literal prefix.
func BenchmarkFtraceMatch(b *testing.B) {
	m, err := Embedded()
	if err != nil {
		b.Fatal(err)
	}
	m.FtraceMatch("vfs_rea*")
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		m.FtraceMatch("vfs_rea*")
	}
}
