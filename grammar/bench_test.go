package grammar

import (
	"testing"
)

// parseValidate runs the line-level steps of the kernel's create functions
// that need no kernel model: comment stripping, argv splitting, the head
// and maxactive checks, the place parse and the event-name checks.
func parseValidate(line string) *Error {
	argv := Split(StripComment(line))
	if len(argv) < 2 {
		return nil
	}
	h, err := ParseHead(argv[0])
	if err != nil {
		panic(err)
	}
	if h.HasMaxactive() {
		if _, err := h.ParseMaxactive(); err != nil {
			return err
		}
	}
	switch argv[0][0] {
	case 'p', 'r':
		p, err := ParseKprobePlace(argv[1])
		if err != nil {
			panic(err)
		}
		if !p.IsUprobe() {
			if _, err := p.Site(); err != nil {
				return err
			}
		}
	case 'f', 't':
		p, err := ParseFprobePlace(argv[1])
		if err != nil {
			panic(err)
		}
		if _, err := p.Site(argv[0][0] == 't', Latest); err != nil {
			return err
		}
	}
	if h.HasEvent() {
		if _, _, err := h.EventName(); err != nil {
			return err
		}
	}
	return nil
}

// BenchmarkParseValidate measures the line-level parse (the engine
// running the grammar) and checks in lines per second.
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

// BenchmarkParticiple measures participle's reflective parser on the same
// constructs (head and place), for comparison with BenchmarkParseValidate.
func BenchmarkParticiple(b *testing.B) {
	lines := benchLines(b)
	head := participleParser[Head](scanHead)
	kp := participleParser[KprobePlace](scanKprobePlace)
	fp := participleParser[FprobePlace](scanFprobePlace)
	b.ReportAllocs()
	b.ResetTimer()
	n := 0
	for i := 0; i < b.N; i++ {
		for _, l := range lines {
			argv := Split(StripComment(l))
			if len(argv) < 2 {
				continue
			}
			head.ParseString("", argv[0])
			switch argv[0][0] {
			case 'p', 'r':
				kp.ParseString("", argv[1])
			default:
				fp.ParseString("", argv[1])
			}
			n++
		}
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "lines/s")
}
