package conformance

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ktrace-dev/ktrace/internal/vmtest"
)

var update = flag.Bool("update", false, "rewrite testdata/conformance/golden-*.jsonl from the VM run")

// runnerPkg is the guest program that applies cases to the real tracefs.
const runnerPkg = "./internal/conformance/cmd/tracefs-runner"

// corpusDir is testdata/conformance under the module root.
func corpusDir(t testing.TB) string {
	t.Helper()
	root, err := vmtest.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(root, "testdata", "conformance")
}

// runVM boots k once and runs every case through the guest runner.
func runVM(ctx context.Context, k vmtest.Kernel, runner []byte, cases []Case, st *vmtest.Stats) ([]Result, error) {
	var in strings.Builder
	for i := range cases {
		b, err := jsonLine(&cases[i])
		if err != nil {
			return nil, err
		}
		in.Write(b)
	}
	out, err := vmtest.Run(ctx, k, vmtest.Guest{
		Script: "/bin/tracefs-runner /vmtest/cases.jsonl",
		Files: map[string][]byte{
			"/bin/tracefs-runner": runner,
			"/vmtest/cases.jsonl": []byte(in.String()),
		},
		Stats: st,
	})
	if err != nil {
		return nil, fmt.Errorf("%w\n--- guest output tail ---\n%s", err, lastBytes(out, 2000))
	}
	rs, err := ParseResults(out)
	if err != nil {
		return nil, err
	}
	if len(rs) != len(cases) {
		return rs, fmt.Errorf("guest returned %d results for %d cases", len(rs), len(cases))
	}
	for i := range rs {
		if rs[i].Key() != cases[i].Key() {
			return rs, fmt.Errorf("result %d is for %s, want %s", i, rs[i].Key(), cases[i].Key())
		}
	}
	return rs, nil
}

func lastBytes(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

// TestConformanceVM runs the whole corpus on each pinned kernel (one boot
// per kernel) and checks the results against the committed goldens; with
// -update it rewrites them instead. It then reports how far ktrace's
// emulation agrees with the fresh kernel results.
func TestConformanceVM(t *testing.T) {
	vmtest.Require(t)
	dir := corpusDir(t)
	files, err := CorpusFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Skipf("no corpus files in %s", dir)
	}
	kernels, err := vmtest.PinnedKernels()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	start := time.Now()
	runner, err := vmtest.BuildStatic(ctx, runnerPkg)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("guest runner built in %v (%d bytes)", time.Since(start).Round(time.Millisecond), len(runner))
	for _, k := range kernels {
		t.Run(k.Name, func(t *testing.T) {
			cases, err := LoadCases(dir, k.Name)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(ctx, 8*time.Minute)
			defer cancel()
			var st vmtest.Stats
			got, err := runVM(ctx, k, runner, cases, &st)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s: %d cases, boot %v, corpus %v, wall %v", k.Name, len(cases),
				st.Boot.Round(time.Millisecond), st.Script.Round(time.Millisecond), st.Wall.Round(time.Millisecond))
			for _, w := range st.Warnings {
				t.Logf("%s: kernel console: %s", k.Name, w)
			}
			for i := range got {
				for _, p := range got[i].Problems {
					t.Errorf("%s: runner problem: %s", got[i].Key(), p)
				}
			}
			golden := filepath.Join(dir, "golden-"+k.Name+".jsonl")
			if *update {
				if err := WriteGolden(golden, got); err != nil {
					t.Fatal(err)
				}
				t.Logf("wrote %s", golden)
			} else {
				checkAgainstGolden(t, golden, got)
			}
			reportEmulation(t, k, got, nil)
		})
	}
}

// checkAgainstGolden fails when a fresh VM run differs from the committed
// golden file: either the corpus changed (regenerate with -update) or the
// kernel's behaviour is not deterministic, which the corpus must avoid.
func checkAgainstGolden(t *testing.T, path string, got []Result) {
	t.Helper()
	want, err := ReadGolden(path)
	if os.IsNotExist(err) || (err != nil && strings.Contains(err.Error(), "no such file")) {
		t.Fatalf("%s missing: go test ./internal/conformance -run VM -update", path)
	}
	if err != nil {
		t.Fatal(err)
	}
	byKey := map[string]*Result{}
	for i := range want {
		byKey[want[i].Key()] = &want[i]
	}
	stale := 0
	for i := range got {
		w, ok := byKey[got[i].Key()]
		if !ok || w.Line != got[i].Line || strings.Join(w.Setup, "\n") != strings.Join(got[i].Setup, "\n") ||
			w.File != got[i].File || strings.Join(w.Enable, "\n") != strings.Join(got[i].Enable, "\n") {
			stale++
			continue
		}
		for _, d := range Compare(w, &got[i]) {
			t.Errorf("%s %s: golden %q, kernel now %q", got[i].Key(), d.Field, d.Want, d.Got)
		}
	}
	if stale > 0 || len(want) != len(got) {
		t.Errorf("%s is stale (%d cases new or changed, %d golden vs %d now): go test ./internal/conformance -run VM -update",
			path, stale, len(want), len(got))
	}
}
