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

// scriptsMarker separates the corpus results from the script suite's
// output in the guest's output.
const scriptsMarker = "@@TRACEFS-SCRIPTS"

// runVM boots k once, runs every case through the guest runner and then
// the tracefs script suite (scripts: guest files under ScriptDir), so one
// boot per kernel serves both conformance suites. It returns the corpus
// results and the script suite's raw output.
func runVM(ctx context.Context, k vmtest.Kernel, runner []byte, cases []Case, scripts map[string][]byte, st *vmtest.Stats) ([]Result, string, error) {
	var in strings.Builder
	for i := range cases {
		b, err := jsonLine(&cases[i])
		if err != nil {
			return nil, "", err
		}
		in.Write(b)
	}
	files := map[string][]byte{
		"/bin/tracefs-runner": runner,
		"/vmtest/cases.jsonl": []byte(in.String()),
	}
	for name, b := range scripts {
		files[name] = b
	}
	script := "/bin/tracefs-runner /vmtest/cases.jsonl\necho " + scriptsMarker + "\n"
	if len(scripts) > 0 {
		script += ScriptRunner
	}
	out, err := vmtest.Run(ctx, k, vmtest.Guest{
		Script: script,
		Files:  files,
		Stats:  st,
	})
	if err != nil {
		return nil, "", fmt.Errorf("%w\n--- guest output tail ---\n%s", err, lastBytes(out, 2000))
	}
	corpusOut, scriptOut, ok := strings.Cut(string(out), scriptsMarker+"\n")
	if !ok {
		return nil, "", fmt.Errorf("guest output has no %s line:\n%s", scriptsMarker, lastBytes(out, 2000))
	}
	rs, err := ParseResults([]byte(corpusOut))
	if err != nil {
		return nil, "", err
	}
	if len(rs) != len(cases) {
		return rs, "", fmt.Errorf("guest returned %d results for %d cases", len(rs), len(cases))
	}
	for i := range rs {
		if rs[i].Key() != cases[i].Key() {
			return rs, "", fmt.Errorf("result %d is for %s, want %s", i, rs[i].Key(), cases[i].Key())
		}
	}
	return rs, scriptOut, nil
}

// checkScripts reports the script suite's results of one kernel.
func checkScripts(t *testing.T, kernel string, names []string, out string) {
	t.Helper()
	res, err := ParseScriptResults(out)
	if err != nil {
		t.Fatalf("%s: %v", kernel, err)
	}
	pass := 0
	for _, n := range names {
		r, ok := res[n]
		switch {
		case !ok:
			t.Errorf("%s: %s did not run", kernel, n)
		case r.Status != 0:
			t.Errorf("%s: %s failed (status %d):\n%s", kernel, n, r.Status, r.Output)
		default:
			pass++
		}
	}
	t.Logf("tracefs conformance: %d/%d scripts pass on the %s kernel's tracefs", pass, len(names), kernel)
}

func lastBytes(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

// TestConformanceVM runs the whole corpus and the tracefs script suite on
// each pinned kernel (one boot per kernel serves both) and checks the results against the committed goldens; with
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
	root, err := vmtest.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	sdir, snames, err := SuiteScripts(root)
	if err != nil {
		t.Fatal(err)
	}
	sruns, err := SuiteRuns(sdir, snames)
	if err != nil {
		t.Fatal(err)
	}
	scripts, err := SuiteFiles(sdir, snames)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range kernels {
		t.Run(k.Name, func(t *testing.T) {
			cases, err := LoadCases(dir, k.Name)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(ctx, 8*time.Minute)
			defer cancel()
			var st vmtest.Stats
			got, scriptOut, err := runVM(ctx, k, runner, cases, scripts, &st)
			if err != nil {
				t.Fatal(err)
			}
			checkScripts(t, k.Name, sruns, scriptOut)
			t.Logf("%s: %d cases and %d scripts, boot %v, guest run %v, wall %v", k.Name, len(cases), len(snames),
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
