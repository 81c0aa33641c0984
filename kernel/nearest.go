package kernel

import (
	"math/bits"
	"strings"
	"sync"

	"github.com/ktrace-dev/ktrace/grammar"
)

// funcNames are a model's distinct function names of one module ("" for
// vmlinux), sorted by length, with the start of each length's run, for
// NearestFunc.
type funcNames struct {
	names []string
	masks []uint64 // charMask of each name
	start []int    // start[l] is the index of the first name of length >= l
}

// charMask has a bit for each character class a name contains (letters
// without case, digits, '_', '.', anything else). Each class one name has
// and the other lacks takes at least one edit, so the bits set in one
// mask and not the other bound the edit distance from below.
func charMask(s string) uint64 {
	var m uint64
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z':
			m |= 1 << (c - 'a')
		case c >= 'A' && c <= 'Z':
			m |= 1 << (26 + c - 'A')
		case c >= '0' && c <= '9':
			m |= 1 << (52 + c - '0')
		case c == '_':
			m |= 1 << 62
		default:
			m |= 1 << 63
		}
	}
	return m
}

type nameKey struct {
	m   *Model
	mod string
}

type nameSet struct {
	once sync.Once
	fn   *funcNames
}

var nameSets sync.Map // nameKey -> *nameSet

// funcNamesOf returns the function names of module mod ("" for vmlinux),
// built once per model and module: the heads of the name index's chains
// with a text entry of that module, bucketed by length in kallsyms order.
func (m *Model) funcNamesOf(mod string) *funcNames {
	v, _ := nameSets.LoadOrStore(nameKey{m, mod}, &nameSet{})
	ns := v.(*nameSet)
	ns.once.Do(func() {
		var names []string
		for _, slot := range m.byName.slots {
			if slot == 0 {
				continue
			}
			for i := slot - 1; i >= 0; i = m.byName.nextOf(i) {
				if s := m.syms.at(int(i)); s.Module == mod && s.IsText() {
					names = append(names, s.Name)
					break
				}
			}
		}
		if len(names) == 0 {
			return
		}
		maxLen := 0
		for _, n := range names {
			maxLen = max(maxLen, len(n))
		}
		// A counting sort by length.
		fn := &funcNames{start: make([]int, maxLen+2)}
		for _, n := range names {
			fn.start[len(n)+1]++
		}
		for l := 1; l < len(fn.start); l++ {
			fn.start[l] += fn.start[l-1]
		}
		fn.names = make([]string, len(names))
		fn.masks = make([]uint64, len(names))
		next := append([]int(nil), fn.start...)
		for _, n := range names {
			j := next[len(n)]
			next[len(n)]++
			fn.names[j] = n
			fn.masks[j] = charMask(n)
		}
		ns.fn = fn
	})
	return ns.fn
}

// plainName reports whether a kprobe can name the function as is: not a
// compiler clone ("foo.isra.0") or an IBT padding symbol ("__pfx_foo").
func plainName(n string) bool {
	return !strings.Contains(n, ".") && !strings.HasPrefix(n, "__pfx_")
}

// NearestFunc returns the function in kallsyms whose name is nearest to
// name ("MOD:NAME" searches that module), for suggesting a correction of
// a misspelled probe place. Among equally near names one that a kprobe
// could name as is (not a compiler-suffixed "foo.isra.0" or an IBT
// "__pfx_" padding symbol) wins. ok is false when none is near enough
// (grammar.MaxSuggestDistance).
func (m *Model) NearestFunc(name string) (string, bool) {
	mod, bare := splitModSym(name)
	fn := m.funcNamesOf(mod)
	if fn == nil {
		return "", false
	}
	maxD := grammar.MaxSuggestDistance(bare)
	qm := charMask(bare)
	best, bestD, bestPlain := "", maxD+1, false
	// Lengths nearest first, so that a near name is found early and
	// bounds the rest.
	for k := 0; k <= 2*maxD; k++ {
		l := len(bare) + (k+1)/2
		if k%2 == 0 {
			l = len(bare) - k/2
		}
		if l < 0 || l+1 >= len(fn.start) {
			continue
		}
		if d := abs(l - len(bare)); d > bestD || (d == bestD && bestPlain) {
			continue
		}
		for i := fn.start[l]; i < fn.start[l+1]; i++ {
			n := fn.names[i]
			if n == bare {
				continue
			}
			plain := plainName(n)
			limit := bestD
			if !plain || bestPlain {
				limit = bestD - 1
			}
			if limit < 0 {
				continue
			}
			lb := max(bits.OnesCount64(qm&^fn.masks[i]), bits.OnesCount64(fn.masks[i]&^qm))
			if lb > limit {
				continue
			}
			d := grammar.EditDistance(bare, n, limit)
			if d < bestD || (d == bestD && plain && !bestPlain) {
				best, bestD, bestPlain = n, d, plain
			}
		}
	}
	if bestD > maxD {
		return "", false
	}
	if mod != "" {
		best = mod + ":" + best
	}
	return best, true
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}
