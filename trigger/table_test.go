package trigger

import (
	"encoding/binary"
	"math/rand"
	"slices"
	"strings"
	"testing"
)

func TestJhash(t *testing.T) {
	// lookup3.c's published hashlittle vectors, which jhash follows on
	// little-endian machines.
	for _, c := range []struct {
		key  string
		init uint32
		want uint32
	}{
		{"", 0, 0xdeadbeef},
		{"Four score and seven years ago", 0, 0x17770551},
		{"Four score and seven years ago", 1, 0xcd628161},
	} {
		if got := jhash([]byte(c.key), c.init); got != c.want {
			t.Errorf("jhash(%q, %d) = %#x, want %#x", c.key, c.init, got, c.want)
		}
	}
}

func TestHeapSortSorts(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for _, v := range []SortVariant{SortClassic, SortDoublePop} {
		for n := 0; n < 70; n++ {
			x := make([]*Entry, n)
			for i := range x {
				x[i] = &Entry{Sums: []uint64{uint64(rng.Intn(10))}}
			}
			heapSort(x, func(a, b *Entry) int { return cmpU64(a.Sums[0], b.Sums[0]) }, v)
			if !slices.IsSortedFunc(x, func(a, b *Entry) int { return cmpU64(a.Sums[0], b.Sums[0]) }) {
				t.Fatalf("variant %d, %d elements: not sorted", v, n)
			}
		}
	}
}

func key8(v uint64) []byte {
	b := make([]byte, 8)
	binary.LittleEndian.PutUint64(b, v)
	return b
}

func TestTableText(t *testing.T) {
	h := &Hist{Bits: 11, Keys: []*HistField{{Name: "pid", Size: 4, Flags: flKey}}, Vals: []*HistField{{Name: "bytes", Size: 8}}}
	h.sorts = []sortKey{{idx: 0}}
	tr := &Trigger{Cmd: "hist", Count: -1, Hist: h}
	tab := &Table{
		Entries: []Entry{
			{Key: key8(7), Sums: []uint64{3, 300}, Created: 1},
			{Key: key8(9), Sums: []uint64{1, 10}, Created: 2},
		},
		Hits: 4,
	}
	got := tr.Text(tab, nil, SortClassic)
	want := "# event histogram\n#\n# trigger info: hist:keys=pid:vals=hitcount,bytes:sort=hitcount:size=2048 [active]\n#\n\n" +
		"{ pid:          9 } hitcount:          1  bytes:         10\n" +
		"{ pid:          7 } hitcount:          3  bytes:        300\n" +
		"\nTotals:\n    Hits: 4\n    Entries: 2\n    Dropped: 0\n"
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

func TestKeyFormats(t *testing.T) {
	str := &HistField{Name: "comm", Size: 256, Flags: flKey | flString}
	pid := &HistField{Name: "common_pid", Size: 4, Flags: flKey | flExecname}
	h := &Hist{Bits: 7, Keys: []*HistField{str, pid}}
	h.sorts = []sortKey{{idx: 0}}
	slots, size := h.KeyLayout()
	if size != 264 || slots[1].Offset != 256 || slots[1].Size != 4 {
		t.Fatalf("layout %+v size %d", slots, size)
	}
	key := make([]byte, size)
	copy(key, "bash")
	binary.LittleEndian.PutUint32(key[256:], 42)
	tr := &Trigger{Cmd: "hist", Count: -1, Hist: h}
	got := tr.Text(&Table{Entries: []Entry{{Key: key, Sums: []uint64{2}, Comm: "bash"}}, Hits: 2}, nil, SortDoublePop)
	line := "{ comm: " + "bash" + strings.Repeat(" ", 46) + ", common_pid: bash            [        42] } hitcount:          2\n"
	if !strings.Contains(got, line) {
		t.Errorf("got\n%s\nwant a line\n%s", got, line)
	}
}
