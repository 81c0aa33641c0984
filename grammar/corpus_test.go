package grammar

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// corpusLines returns the lines of the conformance corpora, or skips.
func corpusLines(t testing.TB) []string {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join("..", "testdata", "conformance", "*.jsonl"))
	var lines []string
	for _, f := range files {
		if strings.HasPrefix(filepath.Base(f), "golden-") {
			continue
		}
		fh, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(fh)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var e struct {
				Line  string   `json:"line"`
				Setup []string `json:"setup"`
			}
			if json.Unmarshal(sc.Bytes(), &e) == nil {
				lines = append(lines, e.Line)
				lines = append(lines, e.Setup...)
			}
		}
		fh.Close()
	}
	if len(lines) == 0 {
		t.Skip("no conformance corpora")
	}
	return lines
}

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
