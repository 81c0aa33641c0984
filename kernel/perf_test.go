package kernel

import (
	"bytes"
	"encoding/binary"
	"path"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
	"github.com/ktrace-dev/ktrace/kernel/internal/blob"
)

// ftraceMatchScan is the definition FtraceMatch's indexed search must agree
// with: path.Match of the glob against every available_filter_functions
// entry of the same module ("" for bare names), compared literally.
func ftraceMatchScan(m *Model, pattern string) bool {
	mod, glob := splitModSym(pattern)
	for _, name := range m.ftrace.names {
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

// embeddedArchive indexes the embedded blob for the load benchmarks.
func embeddedArchive(tb testing.TB) *blob.Archive {
	a, err := blob.Parse(embeddedBlob)
	if err != nil {
		tb.Fatal(err)
	}
	return a
}

// BenchmarkLoadEmbedded measures what every ktrace run pays before its
// first line: building the embedded model (decompression and parsing).
func BenchmarkLoadEmbedded(b *testing.B) {
	a := embeddedArchive(b)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := load(snapshotSource{name: "embedded", read: a.Read, has: a.Has}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkParseKallsyms measures the kallsyms parse alone.
func BenchmarkParseKallsyms(b *testing.B) {
	raw, err := embeddedArchive(b).Read(FileKallsyms)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		m := &Model{}
		if err := m.parseKallsyms(raw); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTextTable measures decompressing and decoding the embedded
// text table, which the first kprobe line of a run needs.
func BenchmarkTextTable(b *testing.B) {
	a := embeddedArchive(b)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		raw, err := a.Read(FileTextTable)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := parseTextTable(raw); err != nil {
			b.Fatal(err)
		}
	}
}

// TestParseHex64 checks the kallsyms address parser against
// strconv.ParseUint(s, 16, 64), whose results it must reproduce.
func TestParseHex64(t *testing.T) {
	for _, s := range []string{
		"", "0", "ffffffff81000000", "FFFFFFFF81000000", "0000000000000000",
		"ffffffffffffffff", "10000000000000000", "000000000000000000001", "0x10",
		"-1", "+1", "g", "12 ", "1_0", "fffffffffffffffff",
	} {
		want, err := strconv.ParseUint(s, 16, 64)
		got, ok := parseHex64(s)
		if ok != (err == nil) || (ok && got != want) {
			t.Errorf("parseHex64(%q) = %#x, %v; ParseUint: %#x, %v", s, got, ok, want, err)
		}
	}
}

// TestSymIndex checks name lookups through the hash index: kallsyms order
// within a name, names absent, and an index over no symbols.
func TestSymIndex(t *testing.T) {
	syms := []Symbol{
		{Name: "a"}, {Name: "b"}, {Name: "a", Module: "m"}, {Name: "c"},
		{Name: "a", Module: "n"}, {Name: "b", Module: "m"},
	}
	for i := 0; i < 100; i++ {
		syms = append(syms, Symbol{Name: "s" + strconv.Itoa(i)})
	}
	var x symIndex
	x.build(syms)
	// The table's names are places in one text, as kallsyms's are.
	var text strings.Builder
	for _, s := range syms {
		text.WriteString(s.Name + "\n" + s.Module + "\n")
	}
	all := text.String()
	off := 0
	for i := range syms {
		n, m := len(syms[i].Name), len(syms[i].Module)
		syms[i].Name = all[off : off+n]
		if m > 0 {
			syms[i].Module = all[off+n+1 : off+n+1+m]
		}
		off += n + m + 2
	}
	table, err := newSymTable(syms, all)
	if err != nil {
		t.Fatal(err)
	}
	chain := func(name string) []int32 {
		var out []int32
		for i := x.first(&table, name); i >= 0; i = x.next[i] {
			out = append(out, i)
		}
		return out
	}
	for name, want := range map[string][]int32{"a": {0, 2, 4}, "b": {1, 5}, "c": {3}, "s99": {105}, "d": nil, "": nil} {
		if got := chain(name); !slices.Equal(got, want) {
			t.Errorf("chain(%q) = %v, want %v", name, got, want)
		}
	}
	var empty symIndex
	if i := empty.first(&symTable{}, "a"); i != -1 {
		t.Errorf("empty index: first = %d", i)
	}
}

// TestAddrRuns checks the run form of an address set against the list it
// was built from, including a list the decoder must sort first.
func TestAddrRuns(t *testing.T) {
	list := []uint64{3, 4, 5, 5, 9, 20, 21, 23}
	var enc []byte
	prev := uint64(0)
	for _, a := range list {
		enc = binary.AppendUvarint(enc, a-prev)
		prev = a
	}
	// 7, 2 wraps to 2 (7 then 7+(2-7)), so the decoder must sort.
	two, seven := uint64(2), uint64(7)
	wrapped := binary.AppendUvarint(binary.AppendUvarint(nil, seven), two-seven)
	for _, c := range []struct {
		enc  []byte
		n    uint64
		want []uint64
	}{
		{enc, uint64(len(list)), list},
		{wrapped, 2, []uint64{2, 7}},
	} {
		r, rest, err := decodeAddrRuns(append(c.enc, 0xaa), c.n)
		if err != nil || !bytes.Equal(rest, []byte{0xaa}) {
			t.Fatalf("decodeAddrRuns: rest %x, %v", rest, err)
		}
		for a := uint64(0); a < 30; a++ {
			if got, want := r.has(a), slices.Contains(c.want, a); got != want {
				t.Errorf("%v: has(%d) = %v, want %v", c.want, a, got, want)
			}
		}
	}
	if _, _, err := decodeAddrRuns([]byte{0x80}, 1); err == nil {
		t.Error("truncated varint accepted")
	}
}

// TestFuncProtoCache checks that remembered FuncProto results are the
// ones a fresh lookup gives, for a function, a name with no BTF function
// and the second call of each.
func TestFuncProtoCache(t *testing.T) {
	m, err := Embedded()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"vfs_read", "no_such_function_in_btf", "jiffies"} {
		fn0, proto0, err0 := m.funcProto(name)
		for i := 0; i < 2; i++ {
			fn, proto, err := m.FuncProto(name)
			if fn != fn0 || proto != proto0 || (err == nil) != (err0 == nil) {
				t.Errorf("FuncProto(%q) call %d = %v, %v, %v; uncached %v, %v, %v", name, i, fn, proto, err, fn0, proto0, err0)
			}
			if err != nil && err0 != nil && err.Error() != err0.Error() {
				t.Errorf("FuncProto(%q) error %q, uncached %q", name, err, err0)
			}
		}
	}
}

// BenchmarkBTFFirstUse measures what the first line with BTF arguments
// costs a ktrace run on the embedded model: decompressing and parsing the
// BTF and the first function lookup.
func BenchmarkBTFFirstUse(b *testing.B) {
	a := embeddedArchive(b)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		m, err := load(snapshotSource{name: "embedded", read: a.Read, has: a.Has})
		if err != nil {
			b.Fatal(err)
		}
		if _, _, err := m.FuncProto("do_sys_openat2"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLoadImage measures decoding the 6.12 snapshot's vmlinuz, which
// instruction-level checks on a snapshot directory pay once per run.
func BenchmarkLoadImage(b *testing.B) {
	dir := snapshotDir(b, "6.12")
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		m, err := LoadSnapshot(dir)
		if err != nil {
			b.Fatal(err)
		}
		if err := m.ImageError(); err != nil {
			b.Fatal(err)
		}
	}
}

// TestDecompressZstd checks the one-call zstd path and its fallback: a
// frame followed by the size the kernel build appends, a bare frame, and
// a frame followed by bytes that are not a size.
func TestDecompressZstd(t *testing.T) {
	raw := bytes.Repeat([]byte("\x7fELF kernel text "), 4096)
	enc, err := zstd.NewWriter(nil)
	if err != nil {
		t.Fatal(err)
	}
	frame := enc.EncodeAll(raw, nil)
	enc.Close()
	size := binary.LittleEndian.AppendUint32(nil, uint32(len(raw)))
	for name, p := range map[string][]byte{
		"size appended": append(append([]byte{}, frame...), size...),
		"bare frame":    frame,
		"garbage after": append(append([]byte{}, frame...), 0xde, 0xad),
	} {
		out, err := decompress(p, len(raw))
		if err != nil || !bytes.Equal(out, raw) {
			t.Errorf("%s: %d bytes, %v", name, len(out), err)
		}
	}
	if _, err := decompress(frame[:len(frame)/2], len(raw)); err == nil {
		t.Error("truncated frame accepted")
	}
}
