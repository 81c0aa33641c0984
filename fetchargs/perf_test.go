package fetchargs

import (
	"strconv"
	"testing"
)

// TestPrevIndex checks the running name set and size sum Parse keeps
// against scanning the list, for a list growing one argument at a time
// past the point where names go into a set, a list replaced by another
// one, and a shorter list.
func TestPrevIndex(t *testing.T) {
	mk := func(n int, prefix string) []*Arg {
		out := make([]*Arg, 0, n)
		for i := 0; i < n; i++ {
			out = append(out, &Arg{Name: prefix + strconv.Itoa(i), Size: i%8 + 1})
		}
		return out
	}
	check := func(x *prevIndex, prev []*Arg, probes []string) {
		t.Helper()
		size := 0
		for _, a := range prev {
			size += a.Size
		}
		if x.size != size {
			t.Errorf("len %d: size %d, want %d", len(prev), x.size, size)
		}
		for _, name := range probes {
			want := false
			for _, a := range prev {
				want = want || a.Name == name
			}
			if got := x.hasName(name); got != want {
				t.Errorf("len %d: hasName(%q) = %v, want %v", len(prev), name, got, want)
			}
		}
	}
	var x prevIndex
	all := mk(40, "a")
	growing := all[:0]
	for i := 0; i <= len(all); i++ {
		growing = all[:i]
		x.update(growing)
		check(&x, growing, []string{"a0", "a" + strconv.Itoa(i), "a" + strconv.Itoa(i-1), "b0", ""})
	}
	other := mk(20, "b")
	x.update(other)
	check(&x, other, []string{"a0", "b0", "b19", "b20"})
	x.update(other[:3])
	check(&x, other[:3], []string{"b0", "b2", "b3", "b19"})
	x.update(nil)
	check(&x, nil, []string{"b0"})
	// The same backing array refilled in place with other arguments,
	// after a shorter and after a longer list of it was indexed.
	for _, before := range []int{5, 30} {
		all = mk(40, "a")
		x.update(all[:before])
		refill := all[:0]
		for _, a := range mk(18, "c") {
			refill = append(refill, a)
		}
		x.update(all[:18])
		check(&x, refill, []string{"a0", "a4", "c0", "c17"})
	}
}
