package grammar

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
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

// The participle view and the fast path agree on argv, the head split and
// the place parse of every corpus line.
func TestASTMatchesFastPath(t *testing.T) {
	extra := []string{"p:grp/ev vfs_read+0x10 a=%di", "r16:ev vfs_read%return", "pxyz: ::", "-:a/b c", "p :x"}
	for _, full := range append(corpusLines(t), extra...) {
		for _, line := range strings.Split(full, "\n") {
			line = StripComment(line)
			if strings.IndexByte(line, 0) >= 0 {
				continue
			}
			ast, err := ParseLineAST(line)
			if err != nil {
				t.Errorf("%q: %v", line, err)
				continue
			}
			argv := Split(line)
			if got := ast.Argv(); !reflect.DeepEqual(got, argv) && !(len(got) == 0 && len(argv) == 0) {
				t.Errorf("%q: AST argv %q, Split %q", line, got, argv)
				continue
			}
			for i, tok := range ast.Tokens {
				if line[tok.Pos.Offset:tok.Pos.Offset+len(argv[i])] != argv[i] {
					t.Errorf("%q: token %d at %d is not %q", line, i, tok.Pos.Offset, argv[i])
				}
			}
			if len(argv) == 0 {
				continue
			}
			if got, want := HeadOf(ast.Tokens[0]), ParseHead(argv[0]); got != want {
				t.Errorf("%q: HeadOf %+v, ParseHead %+v", line, got, want)
			}
		}
	}
}
