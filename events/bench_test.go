package events

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ktrace-dev/ktrace/internal/vmtest"
)

// corpusLines returns the create lines of the conformance corpora.
func corpusLines(tb testing.TB) []string {
	files, _ := filepath.Glob(filepath.Join("..", "testdata", "conformance", "*.jsonl"))
	var lines []string
	for _, f := range files {
		if strings.HasPrefix(filepath.Base(f), "golden-") {
			continue
		}
		fh, err := os.Open(f)
		if err != nil {
			tb.Fatal(err)
		}
		sc := bufio.NewScanner(fh)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var e struct {
				Line string `json:"line"`
			}
			if json.Unmarshal(sc.Bytes(), &e) == nil {
				lines = append(lines, e.Line)
			}
		}
		fh.Close()
	}
	if len(lines) == 0 {
		tb.Skip("no conformance corpora")
	}
	return lines
}

// BenchmarkExec measures the whole create path (line parse, symbol and
// registration checks, fetch-argument parsing, readback) on a 10k-line
// corpus of valid and invalid corpus lines, each on a fresh 6.12 registry.
func BenchmarkExec(b *testing.B) {
	m := vmtest.Model(b, "6.12")
	src := corpusLines(b)
	lines := make([]string, 0, 10000)
	for len(lines) < 10000 {
		lines = append(lines, src[len(lines)%len(src)])
	}
	// One pass before timing: the model's lazily built parts (kernel
	// image, BTF, indexes) are one-time costs, not per-line ones.
	for _, l := range src {
		NewRegistry(m, nil).Exec(DynamicEvents, l)
	}
	b.ReportAllocs()
	b.ResetTimer()
	n := 0
	for i := 0; i < b.N; i++ {
		for _, l := range lines {
			r := NewRegistry(m, nil)
			r.Exec(DynamicEvents, l)
			n++
		}
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "lines/s")
}
