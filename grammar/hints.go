package grammar

// HintKind is what ktrace can add, after the kernel's own error text, to
// explain a rejected line: one "hint:" line built from the kernel model.
// The kernel's message, caret and errno are never changed by a hint.
type HintKind int

// The hint kinds.
const (
	HintNone       HintKind = iota
	HintSymbol              // the nearest function name in kallsyms
	HintType                // the nearest fetch type name
	HintRegister            // the nearest register name of the architecture
	HintVar                 // the nearest $-variable the probe kind accepts
	HintBTFParam            // the nearest parameter of the probed function, with its type
	HintBTFMember           // the nearest member of the struct, with its type
	HintRegProbe            // why registration failed: blacklist, notrace, ftrace
	HintNonUniq             // the places a non-unique symbol names, and how to pick one
	HintRetval              // the function's return type ($retval on a void function)
	HintStringType          // which fetch types fit a string
	HintTracepoint          // the nearest tracepoint name
)

// hintTable says, beside codeTable, which hint each error code gets. A
// code absent here gets no code-specific hint. Independently of the
// code, a line the model's kernel rejects but 6.12's syntax accepts gets
// the release it needs and that --syntax latest runs it (see the needs
// hint in the CLI).
var hintTable = map[Code]HintKind{
	ErrBadProbeAddr:   HintSymbol,
	ErrBadRetprobe:    HintSymbol,
	ErrNoBTFEntry:     HintSymbol,
	ErrBadType:        HintType,
	ErrBadType4Str:    HintStringType,
	ErrBadString:      HintStringType,
	ErrBadRegName:     HintRegister,
	ErrBadVar:         HintVar,
	ErrNoBTFArg:       HintBTFParam,
	ErrNoBTFField:     HintBTFMember,
	ErrNoPtrStrct:     HintBTFMember,
	ErrBadBTFTid:      HintBTFMember,
	ErrFailRegProbe:   HintRegProbe,
	ErrNonUniqSymbol:  HintNonUniq,
	ErrNoRetval:       HintRetval,
	ErrRetvalOnProbe:  HintVar,
	ErrNeedStringType: HintStringType,
}

// Hint returns the hint kind of code c (HintNone when it has none).
func (c Code) Hint() HintKind { return hintTable[c] }

// HintCodes returns every code that has a hint, in table order.
func HintCodes() []Code {
	var out []Code
	for _, c := range Codes() {
		if hintTable[c] != HintNone {
			out = append(out, c)
		}
	}
	return out
}

// EditDistance is the Levenshtein distance between a and b, or a value
// above max as soon as it is certain to exceed max (so that ranking many
// candidates stays cheap).
func EditDistance(a, b string, max int) int {
	if d := len(a) - len(b); d > max || -d > max {
		return max + 1
	}
	// Two rows of the distance table, on the stack for the usual names.
	var rows [2][80]int
	prev, cur := rows[0][:0], rows[1][:0]
	if len(b)+1 <= len(rows[0]) {
		prev, cur = rows[0][:len(b)+1], rows[1][:len(b)+1]
	} else {
		prev, cur = make([]int, len(b)+1), make([]int, len(b)+1)
	}
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		rowMin := cur[0]
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			v := prev[j-1] + cost
			if prev[j]+1 < v {
				v = prev[j] + 1
			}
			if cur[j-1]+1 < v {
				v = cur[j-1] + 1
			}
			cur[j] = v
			if v < rowMin {
				rowMin = v
			}
		}
		if rowMin > max {
			return max + 1
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// MaxSuggestDistance is how far a suggestion may be from what was
// written: about a third of the word, at least 1 and at most 4 edits.
func MaxSuggestDistance(word string) int {
	d := len(word) / 3
	if d < 1 {
		d = 1
	}
	if d > 4 {
		d = 4
	}
	return d
}

// Closest returns the candidate nearest to word (fewest edits, then the
// first in candidate order), if one is within MaxSuggestDistance and is
// not word itself.
func Closest(word string, candidates []string) (string, bool) {
	max := MaxSuggestDistance(word)
	best, bestD := "", max+1
	for _, c := range candidates {
		if c == word {
			continue
		}
		if d := EditDistance(word, c, bestD-1); d < bestD {
			best, bestD = c, d
		}
	}
	return best, bestD <= max
}
