package filter

import "bytes"

// MatchType is how a string predicate compares (the kernel's regex_type).
type MatchType int

const (
	MatchFull   MatchType = iota // the whole string
	MatchFront                   // "abc*": starts with
	MatchMiddle                  // "*abc*": contains
	MatchEnd                     // "*abc": ends with
	MatchGlob                    // any other wildcard: glob_match
)

// Regex is the pattern of a string predicate.
type Regex struct {
	Pattern string // what is compared, wildcards stripped for Front/Middle/End
	Type    MatchType
	// FieldLen is the size of a static string field: comparisons read
	// that many bytes.
	FieldLen int
}

// buildRegex classifies a quoted value. Only "~" patterns are
// classified (filter_parse_regex); "==" and "!=" compare the text as is.
// A leading '!' of a "~" pattern inverts the predicate (sets *not).
func buildRegex(pat string, glob bool, not *bool) *Regex {
	r := &Regex{Pattern: pat, Type: MatchFull}
	if !glob {
		return r
	}
	*not = false
	if len(pat) > 0 && pat[0] == '!' {
		*not = true
		pat = pat[1:]
	}
	r.Pattern = pat
	if len(pat) > 0 && isDigit(pat[0]) {
		return r
	}
	typ := MatchFull
	for i := 0; i < len(pat); i++ {
		switch c := pat[i]; {
		case c == '*':
			switch {
			case i == 0:
				typ = MatchEnd
			case i == len(pat)-1:
				if typ == MatchEnd {
					typ = MatchMiddle
				} else {
					typ = MatchFront
				}
				pat = pat[:i]
			default:
				r.Type = MatchGlob
				return r
			}
		case c == '[' || c == '?' || c == '\\':
			r.Type = MatchGlob
			return r
		}
	}
	if len(pat) > 0 && pat[0] == '*' {
		pat = pat[1:]
	}
	r.Pattern, r.Type = pat, typ
	return r
}

// ParseRegex classifies a pattern as the kernel's filter_parse_regex
// does (as ftrace's function filters read theirs): a leading '!' is taken
// off and reported in not; "abc*", "*abc*" and "*abc" match a prefix, a
// substring and a suffix; any other wildcard makes a glob; a pattern
// starting with a digit is matched in full.
func ParseRegex(pat string) (r *Regex, not bool) {
	r = buildRegex(pat, true, &not)
	return r, not
}

// cstr is s up to its first NUL.
func cstr(s []byte) []byte {
	if i := bytes.IndexByte(s, 0); i >= 0 {
		return s[:i]
	}
	return s
}

// Match compares str, the bytes available at the string's address, with
// the pattern, as the kernel's regex_match_* functions do. n is the
// kernel's length argument: the field size for static strings and comm,
// the recorded length (with its NUL) for dynamic strings, strlen+1 for
// pointer strings; 0 means "NUL-terminated". str may be longer than n.
func (r *Regex) Match(str []byte, n int) bool {
	pat := []byte(r.Pattern)
	switch r.Type {
	case MatchFull:
		if n == 0 {
			return bytes.Equal(cstr(str), pat)
		}
		return strncmp(str, pat, n) == 0
	case MatchFront:
		if n != 0 && n < len(pat) {
			return false
		}
		return strncmp(str, pat, len(pat)) == 0
	case MatchMiddle:
		if n == 0 {
			return bytes.Contains(cstr(str), pat)
		}
		return strnstr(str, pat, n)
	case MatchEnd:
		l := n - 1
		if l < len(pat) || l > len(str) {
			return false
		}
		return bytes.Equal(str[l-len(pat):l], pat)
	default:
		return globMatch(pat, cstr(str))
	}
}

// strncmp compares at most n bytes of two C strings (bytes past a slice's
// end read as NUL).
func strncmp(a, b []byte, n int) int {
	for i := 0; i < n; i++ {
		var x, y byte
		if i < len(a) {
			x = a[i]
		}
		if i < len(b) {
			y = b[i]
		}
		if x != y {
			return int(x) - int(y)
		}
		if x == 0 {
			return 0
		}
	}
	return 0
}

// strnstr is the kernel's strnstr: the pattern within the first n bytes
// of s, NULs in s included.
func strnstr(s, pat []byte, n int) bool {
	if len(pat) == 0 {
		return true
	}
	for off := 0; n >= len(pat); off, n = off+1, n-1 {
		if off+len(pat) > len(s) {
			return false
		}
		if bytes.Equal(s[off:off+len(pat)], pat) {
			return true
		}
	}
	return false
}

// GlobMatch is the kernel's glob_match of str (up to its end) against
// pat, which the eBPF filter stage's tests check their matcher against.
func GlobMatch(pat, str string) bool { return globMatch([]byte(pat), []byte(str)) }

// globMatch is the kernel's glob_match (lib/glob.c): '*', '?', '[...]'
// classes with ranges and a leading '!', '\' escapes; a malformed class
// is matched literally.
func globMatch(pat, str []byte) bool {
	at := func(s []byte, i int) byte {
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
			backP = p
			s--
			backS = s
			continue
		case '[':
			if c == 0 {
				return false
			}
			inverted := at(pat, p) == '!'
			cl := p
			if inverted {
				cl++
			}
			a := at(pat, cl)
			cl++
			match := false
			malformed := false
			for {
				b := a
				if a == 0 {
					malformed = true
					break
				}
				if at(pat, cl) == '-' && at(pat, cl+1) != ']' {
					b = at(pat, cl+1)
					if b == 0 {
						malformed = true
						break
					}
					cl += 2
				}
				if a <= c && c <= b {
					match = true
				}
				a = at(pat, cl)
				cl++
				if a == ']' {
					break
				}
			}
			if malformed {
				break // compared literally below
			}
			if match == inverted {
				if c == 0 || backP < 0 {
					return false
				}
				p = backP
				backS++
				s = backS
				continue
			}
			p = cl
			continue
		case '\\':
			d = at(pat, p)
			p++
		}
		if c == d {
			if d == 0 {
				return true
			}
			continue
		}
		if c == 0 || backP < 0 {
			return false
		}
		p = backP
		backS++
		s = backS
	}
}
