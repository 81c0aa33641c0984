package shell

import (
	"regexp"
	"testing"
)

// TestBREToERE checks basic regular expressions as POSIX grep reads them
// (each case as busybox and GNU grep match it).
func TestBREToERE(t *testing.T) {
	for _, c := range []struct {
		bre, text string
		match     bool
	}{
		{`onchange($p) }`, `{ onchange($p) }: 12`, true},
		{`^a$b$`, `a$b`, true},
		{`a$b`, `xa$by`, true},
		{`^\(ab\)*$`, `abab`, true},
		{`\(a$\)`, `a`, true},
		{`^*x`, `*x`, true},
		{`*x`, `a*x`, true},
		{`a^b`, `a^b`, true},
		{`x\{2\}`, `axxb`, true},
		{`x{2}`, `x{2}`, true},
		{`a+b?c|d`, `a+b?c|d`, true},
		{`a+`, `aa`, false},
		{`a\|b`, `b`, true},
		{`[\]x`, `a\x`, true},
		{`[]a]`, `]`, true},
		{`[^]a]`, `]`, false},
		{`[[:digit:]]\{3\}`, `a123`, true},
		{`[(]`, `(`, true},
		{`^	changed: *[0-9]*  comm: sleep`, "\tchanged:        12  comm: sleep", true},
		{`a.c`, `abc`, true},
		{`[abc`, `[abc`, true},
	} {
		re, err := regexp.Compile(breToERE(c.bre))
		if err != nil {
			t.Errorf("%q: %q: %v", c.bre, breToERE(c.bre), err)
			continue
		}
		if got := re.MatchString(c.text); got != c.match {
			t.Errorf("%q (as %q) on %q: %v, want %v", c.bre, breToERE(c.bre), c.text, got, c.match)
		}
	}
}
