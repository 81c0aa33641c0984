package kernel

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestSetIndexRoundTrip writes the set index of a pinned kernel's
// available_filter_functions and loads it back: the names and every
// answer of the set must be the parsed set's; another key, a cut file or
// hash slots that leave no empty slot must not load.
func TestSetIndexRoundTrip(t *testing.T) {
	text, err := os.ReadFile(filepath.Join(snapshotDir(t, "6.12"), FileFilter))
	if err != nil {
		t.Fatal(err)
	}
	parsed := parseFilterFunctions(append([]byte(nil), text...))
	path := filepath.Join(t.TempDir(), "ftrace-index")
	writeSetIndex(path, "k1", parsed)
	if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("index file: %v, %v (want mode 0600)", st, err)
	}
	loaded, err := loadSetIndex(path, "k1")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(loaded.names, parsed.names) || !reflect.DeepEqual(loaded.slots, parsed.slots) {
		t.Fatal("sets differ")
	}
	for _, line := range strings.Split(string(text), "\n")[:3000] {
		name, _, _ := strings.Cut(line, " ")
		for _, q := range []string{name, name + "_nope", "x" + name} {
			if loaded.has(q) != parsed.has(q) {
				t.Fatalf("has(%q) = %v, parsed %v", q, loaded.has(q), parsed.has(q))
			}
		}
	}
	if _, err := loadSetIndex(path, "k2"); err == nil {
		t.Error("an index written for another key loaded")
	}
	b, _ := os.ReadFile(path)
	for _, cut := range []int{len(b) - 1, len(b) / 2, 100} {
		bad := filepath.Join(t.TempDir(), "bad")
		os.WriteFile(bad, b[:cut], 0o600)
		if _, err := loadSetIndex(bad, "k1"); err == nil {
			t.Errorf("an index cut to %d bytes loaded", cut)
		}
	}
	// Every slot taken: a lookup of a missing name would never end.
	full := append([]byte(nil), b...)
	off := align8(len(setIndexMagic+"k1\n")) + 24
	for i := range len(parsed.slots) {
		binary.LittleEndian.PutUint32(full[off+4*i:], 1)
	}
	if _, err := useSetIndex(full, "k1"); err == nil {
		t.Error("an index whose slots are all taken loaded")
	}
}
