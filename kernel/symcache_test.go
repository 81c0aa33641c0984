package kernel

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// TestSymbolIndexRoundTrip writes the symbol index of a pinned kernel's
// kallsyms and loads it back: every symbol, the name lookups and the
// address lookups must be those of the parsed model; another key, or a
// damaged file, must not load.
func TestSymbolIndexRoundTrip(t *testing.T) {
	text, err := os.ReadFile(filepath.Join(snapshotDir(t, "6.12"), FileKallsyms))
	if err != nil {
		t.Fatal(err)
	}
	parsed := &Model{}
	if err := parsed.parseKallsyms(text); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "kallsyms-index")
	parsed.writeSymbolIndex(path, "k1")
	if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("index file: %v, %v (want mode 0600: it holds kernel addresses)", st, err)
	}
	loaded := &Model{}
	if err := loaded.loadSymbolIndex(path, "k1"); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(loaded.syms.recs, parsed.syms.recs) || loaded.syms.text != parsed.syms.text {
		t.Fatal("symbols differ")
	}
	if !reflect.DeepEqual(loaded.moduleSet(), parsed.moduleSet()) || !reflect.DeepEqual(loaded.addrIdx, parsed.addrIdx) || !reflect.DeepEqual(loaded.addrKeys, parsed.addrKeys) {
		t.Fatal("modules or address index differ")
	}
	for _, name := range []string{"vfs_read", "do_sys_openat2", "_text", "no_such_symbol", "__x64_sys_getppid"} {
		if got, want := loaded.AllSymbols(name), parsed.AllSymbols(name); !reflect.DeepEqual(got, want) {
			t.Errorf("AllSymbols(%q) = %v, want %v", name, got, want)
		}
	}
	for i := range 2000 {
		s := parsed.syms.at(i)
		g, gok := loaded.SymbolAt(s.Addr + 1)
		w, wok := parsed.SymbolAt(s.Addr + 1)
		if g != w || gok != wok {
			t.Fatalf("SymbolAt(%#x) = %v %v, want %v %v", s.Addr+1, g, gok, w, wok)
		}
	}
	if err := (&Model{}).loadSymbolIndex(path, "k2"); err == nil {
		t.Error("an index written for another key loaded")
	}
	b, _ := os.ReadFile(path)
	for _, cut := range []int{len(b) - 1, len(b) / 2, 100} {
		bad := filepath.Join(t.TempDir(), "bad")
		os.WriteFile(bad, b[:cut], 0o600)
		if err := (&Model{}).loadSymbolIndex(bad, "k1"); err == nil {
			t.Errorf("an index cut to %d bytes loaded", cut)
		}
	}
	// A damaged index of the right size loads unchecked: every lookup
	// must still end, without a crash, whatever the arrays hold.
	for seed := range 4 {
		bad := append([]byte(nil), b...)
		rnd := uint64(seed)*0x9e3779b97f4a7c15 + 1
		head := align8(len(symIndexMagic+"k1\n")) + 40
		for i := head; i < len(bad)-int(len(parsed.syms.text)); i += 1 + int(rnd%7) {
			rnd ^= rnd << 13
			rnd ^= rnd >> 7
			rnd ^= rnd << 17
			if seed == 3 {
				bad[i] = 0xff // every slot taken, every link backwards
			} else {
				bad[i] = byte(rnd)
			}
		}
		m := &Model{}
		if err := m.useSymbolIndex(bad, "k1"); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		for _, name := range []string{"vfs_read", "no_such_symbol", "x", ""} {
			m.AllSymbols(name)
			m.LookupName(name)
		}
		for i := range 200 {
			m.SymbolAt(parsed.syms.at(i * 500).Addr)
			m.FuncAt(parsed.syms.at(i * 500).Addr)
		}
		m.ModuleLoaded("e1000")
	}
}
