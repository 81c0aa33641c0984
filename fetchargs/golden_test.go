package fetchargs

import (
	"bufio"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/ktrace-dev/ktrace/internal/vmtest"
)

// goldenEntry is the part of a conformance golden record this package
// checks (testdata/conformance/golden-*.jsonl, written from the VM by the
// conformance harness).
type goldenEntry struct {
	Corpus string   `json:"corpus"`
	Line   string   `json:"line"`
	Setup  []string `json:"setup"`
	File   string   `json:"file"`
	OK     bool     `json:"ok"`
	Errno  string   `json:"errno"`
	Error  *struct {
		Subsys, Msg string
		Pos         int
	} `json:"error"`
	Readback []string          `json:"readback"`
	Formats  map[string]string `json:"formats"`
}

var errnoSymbols = map[string]string{
	"EINVAL": "Invalid argument", "ENOENT": "No such file or directory",
	"E2BIG": "Argument list too long", "ERANGE": "Numerical result out of range",
	"EOPNOTSUPP": "Operation not supported", "ENOMEM": "Cannot allocate memory",
}

// goldenInScope tells whether a golden line's outcome is decided by the
// argument parser alone (no setup, one plain probe line written to its
// own file, no comment, not a uprobe, within the write size limit).
func goldenInScope(g *goldenEntry) bool {
	l := g.Line
	// uprobe_events refuses kprobe lines.
	if len(g.Setup) > 0 || l == "" || len(l) >= 4094 || strings.ContainsAny(l, "#\n") || g.File == "uprobe_events" {
		return false
	}
	argv := strings.Fields(l)
	if len(argv) < 2 {
		return false
	}
	switch argv[0][0] {
	case 'p', 'r':
		if strings.Contains(argv[1], "/") && strings.Contains(argv[1], ":") {
			return false // uprobe
		}
	case 'f', 't':
		if g.File != "dynamic_events" {
			return false
		}
	default:
		return false
	}
	return true
}

// TestConformanceGoldens runs the argument parser over the conformance
// corpus's VM goldens and checks every outcome the arguments decide.
func TestConformanceGoldens(t *testing.T) {
	for _, k := range []string{"6.1", "6.12"} {
		f, err := os.Open("../testdata/conformance/golden-" + k + ".jsonl")
		if err != nil {
			t.Skipf("no goldens: %v", err)
		}
		m := vmtest.Model(t, k)
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<22), 1<<22)
		for sc.Scan() {
			var g goldenEntry
			if err := json.Unmarshal(sc.Bytes(), &g); err != nil {
				f.Close()
				t.Skipf("golden format changed: %v", err)
			}
			if !goldenInScope(&g) {
				continue
			}
			c := &vmCase{line: g.Line}
			if !g.OK {
				if c.errno = errnoSymbols[g.Errno]; c.errno == "" {
					continue
				}
				if g.Error != nil {
					c.logs = []vmLog{{subsys: g.Error.Subsys, msg: g.Error.Msg, pos: g.Error.Pos}}
				}
			} else {
				if len(g.Readback) != 1 || len(g.Formats) != 1 {
					continue
				}
				c.readback = g.Readback
				for _, v := range g.Formats {
					for _, l := range strings.Split(v, "\n") {
						if strings.Contains(l, "field:") || strings.HasPrefix(l, "print fmt") {
							c.format = append(c.format, l)
						}
					}
				}
			}
			t.Run(k+"/"+g.Corpus+"/"+g.Line, func(t *testing.T) {
				// The goldens keep one error_log entry per write: compare
				// it with the last one this package reports.
				if len(c.logs) == 1 {
					if res := runLine(m, c.line); res.err != nil {
						if entries, _ := Logs(res.err); len(entries) > 1 {
							c.logs = append(make([]vmLog, len(entries)-1), c.logs...)
							for i := range entries[:len(entries)-1] {
								c.logs[i] = vmLog{msg: entries[i].Code.Message(), pos: entries[i].Pos(res.argv)}
							}
						}
					}
				}
				checkCase(t, m, k, c)
			})
		}
		f.Close()
	}
}
