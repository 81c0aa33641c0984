package grammar

import (
	"testing"
)

// benchLines builds a 10k-line corpus from the conformance corpora (valid
// and invalid lines alike), repeating them as needed.
func benchLines(b *testing.B) []string {
	src := corpusLines(b)
	out := make([]string, 0, 10000)
	for len(out) < 10000 {
		for _, l := range src {
			if len(out) == 10000 {
				break
			}
			out = append(out, l)
		}
	}
	return out
}

// parseValidate runs the line-level steps of the kernel's create functions
// that need no kernel model: comment stripping, argv splitting, the head
// and maxactive checks, the place parse and the event-name checks.
func parseValidate(line string) *Error {
	argv := Split(StripComment(line))
	if len(argv) < 2 {
		return nil
	}
	h := ParseHead(argv[0])
	if h.HasMaxactive() {
		if _, err := h.ParseMaxactive(); err != nil {
			return err
		}
	}
	switch argv[0][0] {
	case 'p', 'r':
		if _, err, _ := ParseKprobePlace(argv[1]); err != nil {
			return err
		}
	case 'f', 't':
		if _, err := ParseFprobePlace(argv[1], argv[0][0] == 't', Latest); err != nil {
			return err
		}
	}
	if h.HasSpec {
		if _, _, err := ParseEventName(h.Spec, h.SpecOff); err != nil {
			return err
		}
	}
	return nil
}

// BenchmarkParseValidate measures the hand-written line-level parser and
// validator (the path the events package uses) in lines per second.
func BenchmarkParseValidate(b *testing.B) {
	lines := benchLines(b)
	b.ReportAllocs()
	b.ResetTimer()
	n := 0
	for i := 0; i < b.N; i++ {
		for _, l := range lines {
			parseValidate(l)
			n++
		}
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "lines/s")
}

// BenchmarkParseLineAST measures the participle view of the same lines,
// for comparison with BenchmarkParseValidate.
func BenchmarkParseLineAST(b *testing.B) {
	lines := benchLines(b)
	b.ReportAllocs()
	b.ResetTimer()
	n := 0
	for i := 0; i < b.N; i++ {
		for _, l := range lines {
			ParseLineAST(StripComment(l))
			n++
		}
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "lines/s")
}
