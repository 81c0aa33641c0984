package bpfcode

import (
	"math/rand"
	"testing"
)

// backtrackGlob is glob_match's algorithm (one backtracking point, the
// last star), written from its description, on a NUL-terminated str.
func backtrackGlob(pat, str string) bool {
	at := func(s string, i int) byte {
		if i < len(s) {
			return s[i]
		}
		return 0
	}
	p, s := 0, 0
	backP, backS := -1, 0
	for {
		c := at(str, s)
		s++
		d := at(pat, p)
		p++
		switch d {
		case '?':
			if c == 0 {
				return false
			}
			continue
		case '*':
			if at(pat, p) == 0 {
				return true
			}
			backP, backS = p, s-1
			s--
			continue
		case '[':
			if c == 0 {
				return false
			}
			inverted := at(pat, p) == '!'
			class := p
			if inverted {
				class++
			}
			a := at(pat, class)
			class++
			match, literal := false, false
			for {
				b := a
				if a == 0 {
					literal = true
					break
				}
				if at(pat, class) == '-' && at(pat, class+1) != ']' {
					b = at(pat, class+1)
					if b == 0 {
						literal = true
						break
					}
					class += 2
				}
				if a <= c && c <= b {
					match = true
				}
				a = at(pat, class)
				class++
				if a == ']' {
					break
				}
			}
			if !literal {
				if match == inverted {
					goto backtrack
				}
				p = class
				continue
			}
		case '\\':
			d = at(pat, p)
			p++
		}
		// literal
		if c == d {
			if d == 0 {
				return true
			}
			continue
		}
	backtrack:
		if c == 0 || backP < 0 {
			return false
		}
		p = backP
		backS++
		s = backS
	}
}

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
		if got := backtrackGlob(c.pat, c.str); got != c.want {
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
		if a, b := backtrackGlob(string(pat), string(str)), nfaGlob(string(pat), string(str)); a != b {
			t.Fatalf("%q ~ %q: glob_match %v, positions %v", str, pat, a, b)
		}
	}
}
