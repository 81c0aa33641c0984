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

	"github.com/ktrace-dev/ktrace/grammar"
	"github.com/ktrace-dev/ktrace/internal/vmtest"
	"github.com/ktrace-dev/ktrace/kernel"
)

var hostCases = flag.String("hostcases", "", "TestHostModelGuest: run these cases (JSON lines) through the running kernel's model (guest side of TestHostModelVM)")

// hostResultsMarker starts the guest's results in its output.
const hostResultsMarker = "@@HOST-RESULTS"

// TestHostModelGuest is the guest half of TestHostModelVM: it models the
// kernel it runs on (kernel.LoadHost, in a guest with no build files and
// no image), emulates every case with that model and prints the results.
func TestHostModelGuest(t *testing.T) {
	if *hostCases == "" {
		t.Skip("guest side of TestHostModelVM (-hostcases FILE)")
	}
	m, err := kernel.LoadHost()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(*hostCases)
	if err != nil {
		t.Fatal(err)
	}
	rs, err := ParseResults(b)
	if err != nil {
		t.Fatal(err)
	}
	cases := make([]Case, len(rs))
	for i, r := range rs {
		cases[i] = Case{Corpus: r.Corpus, Index: r.Index, Line: r.Line, Setup: r.Setup, File: r.File, Enable: r.Enable}
	}
	major, minor, _ := m.KernelVersion()
	got := emulate(m, grammar.DialectFor(major, minor), cases)
	var out strings.Builder
	for _, f := range m.Facts() {
		fmt.Fprintf(&out, "fact %s = %s (%s)\n", f.Name, f.Value, f.Source)
	}
	out.WriteString(hostResultsMarker + "\n")
	for i := range got {
		line, err := got[i].MarshalLine()
		if err != nil {
			t.Fatal(err)
		}
		out.Write(line)
	}
	os.Stdout.WriteString(out.String())
}

// TestHostModelVM checks the host model, ktrace's model of the kernel it
// runs on, where users run it: in a guest of each pinned kernel that has
// only what a running kernel exposes (no /boot, no /proc/config.gz, no
// image), every conformance case is emulated with kernel.LoadHost and
// compared with the kernel's own results (the goldens). Instruction
// boundaries, ENDBR64 and exception instructions come from the running
// kernel's text there, and the build options from kallsyms.
func TestHostModelVM(t *testing.T) {
	vmtest.Require(t)
	bin := vmtest.TestBinary(t, "./internal/conformance")
	dir := corpusDir(t)
	// The same known differences as the snapshot models' (a caret the
	// kernel computes from unrelated pointers): the host model must not
	// add any.
	known, err := readKnown(filepath.Join(dir, "known-differences.txt"))
	if err != nil {
		t.Fatal(err)
	}
	vmtest.ForEachKernel(t, func(t *testing.T, k vmtest.Kernel) {
		golden := filepath.Join(dir, "golden-"+k.Name+".jsonl")
		want, err := ReadGolden(golden)
		if err != nil {
			t.Skipf("no goldens for %s: %v", k.Name, err)
		}
		b, err := os.ReadFile(golden)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
		defer cancel()
		out, err := vmtest.Run(ctx, k, vmtest.Guest{
			Script: "ls /boot /proc/config.gz 2>/dev/null && echo @@BUILD-FILES\n" +
				"/bin/conformance.test -test.run '^TestHostModelGuest$' -hostcases /vmtest/golden.jsonl 2>&1\n",
			Files: map[string][]byte{"/bin/conformance.test": bin, "/vmtest/golden.jsonl": b},
		})
		if err != nil {
			t.Fatalf("%v\n%s", err, lastBytes(out, 4000))
		}
		s := string(out)
		if strings.Contains(s, "@@BUILD-FILES") {
			t.Fatalf("the guest shows build files:\n%s", s)
		}
		head, results, ok := strings.Cut(s, hostResultsMarker+"\n")
		if !ok {
			t.Fatalf("guest printed no results:\n%s", lastBytes(out, 4000))
		}
		t.Logf("%s host model:\n%s", k.Name, head)
		results, _, _ = strings.Cut(results, "\nPASS")
		got, err := ParseResults([]byte(results))
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Fatalf("%d results for %d cases", len(got), len(want))
		}
		unexpected := 0
		for _, key := range compareEmulation(t, k.Name+" host model (no image, no config)", want, got, nil) {
			if _, ok := known[k.Name+"\t"+key]; !ok {
				unexpected++
			}
		}
		if unexpected > 0 {
			t.Errorf("%s: the host model (no image, no config) disagrees with the kernel on %d cases not in known-differences.txt", k.Name, unexpected)
		}
	})
}
