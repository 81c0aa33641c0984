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

// TestTextTableLists checks the sorted-list forms of the text table's
// address sets, including entries a generator could write out of order or
// twice (the later one wins, as it did when they were hash maps).
func TestTextTableLists(t *testing.T) {
	s := addrSet{0x10, 0x20, 0x30}
	for _, c := range []struct {
		addr uint64
		want bool
	}{{0x10, true}, {0x20, true}, {0x30, true}, {0, false}, {0x11, false}, {0x31, false}} {
		if got := s.has(c.addr); got != c.want {
			t.Errorf("has(%#x) = %v, want %v", c.addr, got, c.want)
		}
	}
	u := undecodableList{sym: []uint64{0x30, 0x10, 0x30, 0x20}, fail: []uint64{1, 2, 3, 4}}
	u.sortKeepLast()
	for _, c := range []struct {
		sym, fail uint64
		ok        bool
	}{{0x10, 2, true}, {0x20, 4, true}, {0x30, 3, true}, {0x40, 0, false}} {
		if fail, ok := u.lookup(c.sym); fail != c.fail || ok != c.ok {
			t.Errorf("lookup(%#x) = %d, %v; want %d, %v", c.sym, fail, ok, c.fail, c.ok)
		}
	}
	// Two undecodable entries for one symbol (delta 0): the later wins.
	tab, err := parseTextTable([]byte{0, 2, 0x10, 1, 0, 5, 0, 0, 0, 0, 0, 0})
	if err != nil {
		t.Fatal(err)
	}
	if fail, ok := tab.undecodable.lookup(0x10); !ok || fail != 0x15 {
		t.Errorf("undecodable(0x10) = %#x, %v; want 0x15, true", fail, ok)
	}
}
