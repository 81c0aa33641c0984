package kernel

import (
	"strings"

	"github.com/ktrace-dev/ktrace/grammar"
)

// NearestFunc returns the function in kallsyms whose name is nearest to
// name ("MOD:NAME" searches that module), for suggesting a correction of
// a misspelled probe place. Among equally near names one that a kprobe
// could name as is (not a compiler-suffixed "foo.isra.0" or an IBT
// "__pfx_" padding symbol) wins. ok is false when none is near enough
// (grammar.MaxSuggestDistance).
func (m *Model) NearestFunc(name string) (string, bool) {
	mod, bare := splitModSym(name)
	max := grammar.MaxSuggestDistance(bare)
	best, bestD, bestPlain := "", max+1, false
	for i := range m.syms {
		s := &m.syms[i]
		if s.Module != mod || !s.IsText() || s.Name == bare {
			continue
		}
		if d := len(s.Name) - len(bare); d > max || -d > max {
			continue
		}
		plain := !strings.Contains(s.Name, ".") && !strings.HasPrefix(s.Name, "__pfx_")
		limit := bestD
		if !plain || bestPlain {
			limit = bestD - 1
		}
		if limit < 0 {
			continue
		}
		d := grammar.EditDistance(bare, s.Name, limit)
		if d < bestD || (d == bestD && plain && !bestPlain) {
			best, bestD, bestPlain = s.Name, d, plain
		}
	}
	if bestD > max {
		return "", false
	}
	if mod != "" {
		best = mod + ":" + best
	}
	return best, true
}
