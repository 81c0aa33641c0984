package trigger

import (
	"encoding/binary"
	"math/rand"
	"slices"
	"strings"
	"testing"

	"github.com/ktrace-dev/ktrace/grammar"
)

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
			{Key: key8(7), Sums: []uint64{3, 300}},
			{Key: key8(9), Sums: []uint64{1, 10}},
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
	if size != 264 || slots[1].Offset != 256 || slots[1].Size != 8 {
		t.Fatalf("layout %+v size %d", slots, size)
	}
	key := make([]byte, size)
	copy(key, "bash")
	binary.LittleEndian.PutUint64(key[256:], 42)
	tr := &Trigger{Cmd: "hist", Count: -1, Hist: h}
	got := tr.Text(&Table{Entries: []Entry{{Key: key, Sums: []uint64{2}, Comm: "bash"}}, Hits: 2}, nil, SortDoublePop)
	line := "{ comm: " + "bash" + strings.Repeat(" ", 46) + ", common_pid: bash            [        42] } hitcount:          2\n"
	if !strings.Contains(got, line) {
		t.Errorf("got\n%s\nwant a line\n%s", got, line)
	}
}

// TestCompoundSignedKey checks a compound key of small signed fields
// against the kernels': "hist:keys=c8,c16:sort=c8" on a kprobe of
// vfs_write with c8=$arg3:s8 c16=$arg3:s16, dd writing 128 and 255 bytes.
// The kernel copies each key field into its slot in the slot's size, 8
// bytes of the sign-extended u64, and prints the u64: both 6.1.192 and
// 6.12.95 show c8 -128 as 18446744073709551488, and sort it first.
func TestCompoundSignedKey(t *testing.T) {
	c8 := &HistField{Name: "c8", Size: 1, Flags: flKey, Signed: true}
	c16 := &HistField{Name: "c16", Size: 2, Flags: flKey, Signed: true}
	h := &Hist{Bits: 11, Keys: []*HistField{c8, c16}}
	h.sorts = []sortKey{{idx: 1}}
	slots, size := h.KeyLayout()
	if size != 16 || slots[0].Size != 8 || slots[1].Offset != 8 || slots[1].Size != 8 {
		t.Fatalf("layout %+v size %d: want two slots of 8 bytes", slots, size)
	}
	key := func(a, b int64) []byte {
		k := make([]byte, size)
		binary.LittleEndian.PutUint64(k, uint64(a))
		binary.LittleEndian.PutUint64(k[8:], uint64(b))
		return k
	}
	tr := &Trigger{Cmd: "hist", Count: -1, Hist: h}
	tab := &Table{Entries: []Entry{{Key: key(-1, 255), Sums: []uint64{1}}, {Key: key(-128, 128), Sums: []uint64{1}}}, Hits: 2}
	got := tr.Text(tab, nil, SortDoublePop)
	want := "{ c8: 18446744073709551488, c16:        128 } hitcount:          1\n" +
		"{ c8: 18446744073709551615, c16:        255 } hitcount:          1\n"
	if !strings.Contains(got, want) {
		t.Errorf("got\n%s\nwant the lines\n%s", got, want)
	}
}

// TestTieOrder checks the order of entries that sort equal against the
// kernels': "hist:keys=ret" on a kretprobe of vfs_write, one dd write of
// each size (so every hitcount is 1), read from 6.1.192's and 6.12.95's
// hist files in the VM. 6.1's heapsort pops one element per round,
// 6.12's two.
func TestTieOrder(t *testing.T) {
	all := []uint64{100, 200, 300, 400, 500, 600, 700, 800, 900, 1000, 1100, 1200}
	cases := []struct {
		v         SortVariant
		n         int
		kernelOut []uint64
	}{
		{SortClassic, 12, []uint64{300, 1100, 600, 100, 900, 400, 1200, 700, 200, 1000, 500, 800}},
		{SortClassic, 3, []uint64{100, 200, 300}},
		{SortClassic, 4, []uint64{100, 400, 200, 300}},
		{SortClassic, 5, []uint64{100, 400, 200, 500, 300}},
		{SortDoublePop, 12, []uint64{300, 600, 100, 900, 400, 1200, 700, 200, 1000, 500, 1100, 800}},
		{SortDoublePop, 3, []uint64{200, 100, 300}},
		{SortDoublePop, 4, []uint64{100, 200, 400, 300}},
		{SortDoublePop, 5, []uint64{200, 100, 500, 400, 300}},
	}
	h := &Hist{Bits: 11, Keys: []*HistField{{Name: "ret", Size: 8, Flags: flKey, Signed: true}}}
	h.sorts = []sortKey{{idx: 0}}
	for _, c := range cases {
		var es []Entry
		// The table's order does not matter: reverse it.
		for i := c.n - 1; i >= 0; i-- {
			es = append(es, Entry{Key: key8(all[i]), Sums: []uint64{1}})
		}
		var got []uint64
		for _, e := range h.order(es, c.v) {
			got = append(got, binary.LittleEndian.Uint64(e.Key))
		}
		if !slices.Equal(got, c.kernelOut) {
			t.Errorf("variant %d, %d keys: %v, kernel's %v", c.v, c.n, got, c.kernelOut)
		}
	}
}

func TestPercentAndBar(t *testing.T) {
	// __get_percentage and __fill_bar_str by hand: 1 of 3 is 33.33%,
	// which fills 6 of 20 columns; a zero total is an error unless the
	// value is 0 too.
	for _, c := range []struct {
		val, total uint64
		want       uint32
	}{{1, 3, 3333}, {3, 3, 10000}, {0, 0, 0}, {5, 0, noPercent}, {^uint64(0), ^uint64(0), 10000}} {
		if got := percentage(c.val, c.total); got != c.want {
			t.Errorf("percentage(%d, %d) = %d, want %d", c.val, c.total, got, c.want)
		}
	}
	if got := bar(1, 3); got != "######              " {
		t.Errorf("bar(1, 3) = %q", got)
	}
	if got := bar(7, 7); got != strings.Repeat("#", 20) {
		t.Errorf("bar(7, 7) = %q", got)
	}
	h := &Hist{Bits: 11, Keys: []*HistField{{Name: "n", Size: 8, Flags: flKey}},
		Vals: []*HistField{{Name: "", Size: 8, Flags: flHitcount | flPercent}, {Name: "x", Size: 8, Flags: flGraph}}}
	h.sorts = []sortKey{{idx: 3}}
	tr := &Trigger{Cmd: "hist", Count: -1, Hist: h}
	got := tr.Text(&Table{Entries: []Entry{
		{Key: key8(1), Sums: []uint64{1, 1, 10}},
		{Key: key8(2), Sums: []uint64{3, 3, 40}},
	}, Hits: 4}, nil, SortClassic)
	for _, line := range []string{
		"{ n:          1 } hitcount:          1  hitcount (%):  25.00  x: #####               \n",
		"{ n:          2 } hitcount:          3  hitcount (%):  75.00  x: ####################\n",
	} {
		if !strings.Contains(got, line) {
			t.Errorf("want line %q in\n%s", line, got)
		}
	}
}

// A stacktrace key prints each frame under the key's name, which is
// "stacktrace" on 6.1 and "common_stacktrace" on 6.12 (both guests'
// hist files, tools/vmsh).
func TestStacktraceKeyText(t *testing.T) {
	for _, tc := range []struct {
		major, minor int
		written      string
		want         string
	}{
		{6, 12, "hist:keys=common_stacktrace", "common_stacktrace"},
		{6, 12, "hist:keys=stacktrace", "common_stacktrace"},
		{6, 1, "hist:keys=stacktrace", "stacktrace"},
	} {
		ev := testEvent(t)
		ev.Env.Dialect = grammar.DialectFor(tc.major, tc.minor)
		var l List
		if r := l.Write([]byte(tc.written), ev); r.Errno != 0 {
			t.Fatalf("%d.%d %s: errno %v", tc.major, tc.minor, tc.written, r.Errno)
		}
		tr := l.Triggers[0]
		slots, size := tr.Hist.KeyLayout()
		if size != 128 || len(slots) != 1 {
			t.Fatalf("%s: key of %d bytes, %d slots; the kernel's holds 16 frames", tc.written, size, len(slots))
		}
		key := make([]byte, size)
		binary.LittleEndian.PutUint64(key, 0x1010)
		binary.LittleEndian.PutUint64(key[8:], 0x2020)
		tab := &Table{Entries: []Entry{{Key: key, Sums: []uint64{2}}}, Hits: 2}
		got := tr.Text(tab, nil, SortClassic)
		want := "# event histogram\n#\n# trigger info: hist:keys=" + tc.want + ":vals=hitcount:sort=hitcount:size=2048 [active]\n#\n\n" +
			"{ " + tc.want + ":\n         0x1010\n         0x2020\n} hitcount:          2\n" +
			"\nTotals:\n    Hits: 2\n    Entries: 1\n    Dropped: 0\n"
		if got != want {
			t.Errorf("%d.%d %s: got\n%s\nwant\n%s", tc.major, tc.minor, tc.written, got, want)
		}
	}
}

// TestLog2Wraps: a .log2 key carries its kernel's rule for values above
// 2^63 (6.12.95 keys them 2^0, 6.1.192 2^64; grammar.Dialect.Log2Wraps),
// other keys do not.
func TestLog2Wraps(t *testing.T) {
	for _, tc := range []struct {
		major, minor int
		want         bool
	}{{6, 1, false}, {6, 12, true}} {
		ev := testEvent(t)
		ev.Env.Dialect = grammar.DialectFor(tc.major, tc.minor)
		var l List
		if r := l.Write([]byte("hist:keys=common_pid.log2,common_pid"), ev); r.Errno != 0 {
			t.Fatalf("%d.%d: errno %v", tc.major, tc.minor, r.Errno)
		}
		keys := l.Triggers[0].Hist.Keys
		if keys[0].Log2Wraps() != tc.want || keys[1].Log2Wraps() {
			t.Errorf("%d.%d: Log2Wraps %v, %v; want %v, false", tc.major, tc.minor, keys[0].Log2Wraps(), keys[1].Log2Wraps(), tc.want)
		}
	}
}

// TestExpressionKeyOrder: a key that is an expression sorts by all 8
// bytes of its value, signed as its first operand, as the kernel compares
// keys without an event field: "hist:keys=c8*2:sort=c8*2" on an s8 c8
// lists -112, -2, 2, 4, 6, 62, 200, 202 on 6.1.192 and 6.12.95 (not
// 200 and 202 first, as the low byte compared as an s8 would). Here an
// s32 b: b*2 of 0x40000000 is 2^31, after 2, not before -2.
func TestExpressionKeyOrder(t *testing.T) {
	ev := testEvent(t)
	var l List
	if r := l.Write([]byte("hist:keys=b*2:sort=b*2"), ev); r.Errno != 0 {
		t.Fatalf("errno %v", r.Errno)
	}
	tr := l.Triggers[0]
	var es []Entry
	for _, v := range []int64{1 << 31, 2, -2} {
		es = append(es, Entry{Key: key8(uint64(v)), Sums: []uint64{1}})
	}
	var got []int64
	for _, e := range tr.Hist.order(es, SortDoublePop) {
		got = append(got, int64(binary.LittleEndian.Uint64(e.Key)))
	}
	if want := []int64{-2, 2, 1 << 31}; !slices.Equal(got, want) {
		t.Errorf("order %v, the kernel's %v", got, want)
	}
}
