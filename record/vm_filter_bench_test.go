package record

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/ktrace-dev/ktrace/internal/vmtest"
)

// filterBenchCases are the filters of the filtered-out hit comparison:
// each rejects every getppid call of the workload.
var filterBenchCases = []struct{ name, filter string }{
	{"number", "common_pid == 1"},
	{"comm", `comm == "nomatch"`},
	{"string arg", `c == "nomatch"`},
}

// TestFilterCostVM reports, per pinned kernel in a 2-CPU guest with no
// build files, what a hit that the event's filter rejects costs, over
// 200,000 getppid calls: the kernel's kprobe event with the filter in its
// filter file, and ktrace record --filter (the filter runs in the eBPF
// program before any ring space is taken), each beside the bare loop of
// the same boot. Figures under TCG are reported ("FIGURE"), not gated.
// Set KTRACE_VM_BENCH=1 to run it.
func TestFilterCostVM(t *testing.T) {
	if os.Getenv("KTRACE_VM_BENCH") != "1" {
		t.Skip("set KTRACE_VM_BENCH=1 to run the VM benchmarks")
	}
	vmtest.Require(t)
	kt, wl := vmtest.Ktrace(t), vmtest.Binary(t, "./internal/vmtest/workload")
	const calls = 200000
	const line = `p:b/a __x64_sys_getppid x=%di c=$comm`
	reps := 3
	vmtest.ForEachKernel(t, func(t *testing.T, k vmtest.Kernel) {
		w := fmt.Sprintf("/bin/workload getppid %d", calls)
		var sc strings.Builder
		fmt.Fprintf(&sc, "%s >/dev/null\n", w)
		for i, c := range filterBenchCases {
			for r := 0; r < reps; r++ {
				id := fmt.Sprintf("%d-%d", i, r)
				fmt.Fprintf(&sc, "echo @@BASE%s; %s; echo @@END-BASE%s\n", id, w, id)
				fmt.Fprintf(&sc, "echo %s >> kprobe_events; echo %s > events/b/a/filter; echo 1 > events/b/a/enable; echo > trace\n",
					vmtest.ShQuote(line), vmtest.ShQuote(c.filter))
				fmt.Fprintf(&sc, "echo @@KERNEL%s; %s; echo @@END-KERNEL%s\n", id, w, id)
				sc.WriteString("echo 0 > events/b/a/enable\n")
				fmt.Fprintf(&sc, "echo @@KLINES%s; grep -c ' a: ' trace; echo @@END-KLINES%s\n", id, id)
				sc.WriteString("echo > kprobe_events; echo > trace\n")
				fmt.Fprintf(&sc, "echo @@KTRACE%s; /bin/ktrace --kernel host record --filter %s %s -w /tmp/t.txt -- %s 2>/tmp/e; cat /tmp/e; echo @@END-KTRACE%s\n",
					id, vmtest.ShQuote(c.filter), vmtest.ShQuote(line), w, id)
				fmt.Fprintf(&sc, "echo @@TLINES%s; grep -c ' a: ' /tmp/t.txt; echo @@END-TLINES%s\n", id, id)
				sc.WriteString("rm -f /tmp/t.txt\n")
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
		defer cancel()
		out, err := vmtest.Run(ctx, k, vmtest.Guest{
			Script: sc.String(),
			Files:  map[string][]byte{"/bin/ktrace": kt, "/bin/workload": wl},
			CPUs:   2,
		})
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		s := string(out)
		median := func(v []int) int {
			sort.Ints(v)
			return v[len(v)/2]
		}
		for i, c := range filterBenchCases {
			var base, ko, to []int
			for r := 0; r < reps; r++ {
				id := fmt.Sprintf("%d-%d", i, r)
				b, kn, kt := nsPerOp(s, "BASE"+id), nsPerOp(s, "KERNEL"+id), nsPerOp(s, "KTRACE"+id)
				if b == 0 || kn == 0 || kt == 0 {
					t.Errorf("%s: missing timings:\n%s", c.name, vmSection(s, "KTRACE"+id))
					continue
				}
				if n := strings.TrimSpace(vmSection(s, "KLINES"+id)); n != "0" {
					t.Errorf("%s: the kernel recorded %s events through %q", c.name, n, c.filter)
				}
				if n := strings.TrimSpace(vmSection(s, "TLINES"+id)); n != "0" {
					t.Errorf("%s: ktrace recorded %s events through %q", c.name, n, c.filter)
				}
				base, ko, to = append(base, b), append(ko, kn-b), append(to, kt-b)
			}
			if len(base) == 0 {
				continue
			}
			mko, mto := median(ko), median(to)
			ratio := 0.0
			if mko > 0 {
				ratio = float64(mto) / float64(mko)
			}
			t.Logf("FIGURE %s filtered-out hit (%s, %q on %q): %d getppid calls, 2 vCPUs (TCG), median of %d: base %d ns/call; kernel filter +%d ns; ktrace eBPF filter +%d ns; ratio %.2f (runs: kernel %v, ktrace %v)",
				k.Name, c.name, c.filter, line, calls, len(base), median(base), mko, mto, ratio, ko, to)
		}
	})
}

var nsopLine = regexp.MustCompile(`(\d+) ns/op`)

func nsPerOp(out, sec string) int {
	var v int
	if mm := nsopLine.FindStringSubmatch(vmSection(out, sec)); mm != nil {
		fmt.Sscan(mm[1], &v)
	}
	return v
}

func vmSection(out, name string) string {
	_, rest, ok := strings.Cut(out, "@@"+name+"\n")
	if !ok {
		return ""
	}
	body, _, _ := strings.Cut(rest, "@@END-"+name)
	return body
}
