package bpfcode

import (
	"math/rand"
	"testing"

	"github.com/ktrace-dev/ktrace/filter"
)

// nfaGlob follows the positions globElems gives, as globFixed's program
// does, over str (no NUL inside).
func nfaGlob(pat, str string) bool {
	el := globElems(pat)
	closure := func(m uint64) uint64 {
		for j, x := range el {
			if x.star && m&(1<<j) != 0 {
				m |= 1 << (j + 1)
			}
		}
		return m
	}
	m := closure(1)
	for i := 0; i < len(str); i++ {
		c := str[i]
		var n uint64
		for j, x := range el {
			if m&(1<<j) == 0 {
				continue
			}
			if x.star {
				n |= 1 << j
				continue
			}
			for _, r := range x.ranges {
				if r[0] <= c && c <= r[1] {
					n |= 1 << (j + 1)
					break
				}
			}
		}
		m = closure(n)
		if m == 0 {
			return false
		}
	}
	return m&(1<<len(el)) != 0
}

// TestGlobElems: the positions the program follows match what
// glob_match's backtracking finds, on hand-picked and random patterns
// (stars, '?', classes with ranges, inversion, a first ']', malformed
// classes, escapes) and strings.
func TestGlobElems(t *testing.T) {
	cases := []struct {
		pat, str string
		want     bool
	}{
		{"b?sh", "bash", true}, {"b?sh", "bsh", false}, {"a*b*c", "axxbyyc", true},
		{"a*b*c", "axxbyy", false}, {"[ab]*", "bob", true}, {"[!ab]*", "bob", false},
		{"[]a]x", "]x", true}, {"[a-c]", "b", true}, {"[c-a]", "b", false},
		{"[abc", "[abc", true}, {"a\\*b", "a*b", true}, {"a\\*b", "axb", false},
		{"k*/[0-9]*", "kworker/1:2", true}, {"*a?", "bab", true}, {"x\\", "x", true},
	}
	for _, c := range cases {
		if got := filter.GlobMatch(c.pat, c.str); got != c.want {
			t.Errorf("reference: %q ~ %q = %v, want %v", c.str, c.pat, got, c.want)
		}
		if got := nfaGlob(c.pat, c.str); got != c.want {
			t.Errorf("positions: %q ~ %q = %v, want %v", c.str, c.pat, got, c.want)
		}
	}
	rng := rand.New(rand.NewSource(1))
	const alpha = "ab*?[]!-\\c"
	for n := 0; n < 200000; n++ {
		pat := make([]byte, rng.Intn(8))
		for i := range pat {
			pat[i] = alpha[rng.Intn(len(alpha))]
		}
		str := make([]byte, rng.Intn(8))
		for i := range str {
			str[i] = "abc[]-!*"[rng.Intn(8)]
		}
		if a, b := filter.GlobMatch(string(pat), string(str)), nfaGlob(string(pat), string(str)); a != b {
			t.Fatalf("%q ~ %q: glob_match %v, positions %v", str, pat, a, b)
		}
	}
}
