package kernel

import (
	"os"
	"path/filepath"
	"testing"
)

func TestWithoutPseudoModules(t *testing.T) {
	const base = "ffffffff81000000 T _text\nffffffffc0000000 t foo\t[ext4]\n"
	for _, tc := range []struct{ in, want string }{
		{base, base},
		{base + "ffffffffc0100000 t bpf_prog_1_x\t[bpf]\nffffffffc0200000 t ftrace_trampoline\t[__builtin__ftrace]\n", base},
		{base + "ffffffffc0100000 t bpf_prog_1_x\t[bpf]\nffffffffc0300000 t bar\t[xfs]\n", base + "ffffffffc0300000 t bar\t[xfs]\n"},
	} {
		if got := string(withoutPseudoModules([]byte(tc.in))); got != tc.want {
			t.Errorf("withoutPseudoModules(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestKallsymsCacheFile checks the cache file's round trip: the header
// must match exactly, and the text after it comes back unchanged.
func TestKallsymsCacheFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "kallsyms-x")
	text := []byte("ffffffff81000000 T _text\n")
	writeCacheFile(path, append([]byte(cacheMagic+"k1\n"), text...))
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("cache mode %v, want 0600 (it holds kernel addresses)", st.Mode().Perm())
	}
	if d, _ := os.Stat(filepath.Dir(path)); d.Mode().Perm() != 0o700 {
		t.Errorf("cache directory mode %v, want 0700", d.Mode().Perm())
	}
	b, err := readProcFile(path)
	if err != nil || string(b) != cacheMagic+"k1\n"+string(text) {
		t.Fatalf("cache reads back %q, %v", b, err)
	}
}
