package tracer

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ktrace-dev/ktrace/internal/vmtest"
)

// TestVerifierVM runs TestVerifierAcceptsCorpus inside each pinned kernel:
// every probe a valid line of that kernel's conformance goldens registers
// is compiled with the booted kernel's own model and loaded (not
// attached); its verifier must accept all.
func TestVerifierVM(t *testing.T) {
	vmtest.Require(t)
	root, err := vmtest.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "tracer.test")
	build := exec.Command("go", "test", "-c", "-trimpath", "-ldflags=-s -w", "-o", bin, "./tracer")
	build.Dir = root
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64")
	var stderr bytes.Buffer
	build.Stderr = &stderr
	if err := build.Run(); err != nil {
		t.Fatalf("building the test binary: %v\n%s", err, stderr.String())
	}
	testBin, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	accepted := regexp.MustCompile(`accepted (\d+) probe programs \(\+(\d+) entry programs\)`)
	vmtest.ForEachKernel(t, func(t *testing.T, k vmtest.Kernel) {
		goldens, err := os.ReadFile(filepath.Join(root, "testdata", "conformance", "golden-"+k.Name+".jsonl"))
		if err != nil {
			t.Skipf("no goldens for %s: %v", k.Name, err)
		}
		latest, err := os.ReadFile(filepath.Join(root, "testdata", "conformance", "golden-6.12.jsonl"))
		if err != nil {
			t.Skipf("no 6.12 goldens: %v", err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
		defer cancel()
		script := "cd /tmp && KTRACE_VERIFIER_KERNEL=" + k.Name + " KTRACE_VERIFIER_MODEL=host KTRACE_VERIFIER_GOLDENS=/goldens.jsonl " +
			"/bin/tracer.test -test.run '^TestVerifierAcceptsCorpus$' -test.v 2>&1 | tail -40\n" +
			// The 6.12 corpus with the newest syntax on this kernel.
			"echo @@LATEST; KTRACE_VERIFIER_KERNEL=6.12 KTRACE_VERIFIER_SYNTAX=latest KTRACE_VERIFIER_MODEL=host KTRACE_VERIFIER_GOLDENS=/latest.jsonl " +
			"/bin/tracer.test -test.run '^TestVerifierAcceptsCorpus$' -test.v 2>&1 | tail -40"
		out, err := vmtest.Run(ctx, k, vmtest.Guest{
			Script: script,
			Files: map[string][]byte{
				"/bin/tracer.test": testBin,
				"/goldens.jsonl":   goldens,
				"/latest.jsonl":    latest,
			},
		})
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		own, newest, _ := strings.Cut(string(out), "@@LATEST")
		for _, part := range []struct{ what, out string }{
			{k.Name + " corpus, " + k.Name + " syntax", own},
			{"6.12 corpus, newest syntax", newest},
		} {
			if !strings.Contains(part.out, "--- PASS: TestVerifierAcceptsCorpus") {
				t.Errorf("%s: verifier test failed in the %s guest:\n%s", part.what, k.Name, part.out)
				continue
			}
			if mm := accepted.FindStringSubmatch(part.out); mm != nil {
				t.Logf("%s kernel, %s: the verifier accepted %s probe programs and %s entry programs", k.Name, part.what, mm[1], mm[2])
			} else {
				t.Errorf("no acceptance count in:\n%s", part.out)
			}
		}
	})
}
