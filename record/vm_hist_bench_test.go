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

// histBenchCases are the hist triggers of the per-hit cost comparison.
var histBenchCases = []struct{ name, trigger string }{
	{"numeric key", "hist:keys=common_pid"},
	{"string key", "hist:keys=c"},
	{"log2 key and a sum", "hist:keys=x.log2:vals=x"},
}

var histHits = regexp.MustCompile(`Hits: (\d+)`)

// TestHistCostVM reports, per pinned kernel in a 2-CPU guest with no
// build files, what a hit counted by a hist trigger costs over 200,000
// getppid calls, the event itself not traced: the kernel's kprobe event
// with the trigger in its trigger file (soft mode), and ktrace record
// --trigger --no-trace (the histogram counted in the eBPF program), each
// beside the bare loop of the same boot. Both histograms must count every
// call. Figures under TCG are reported ("FIGURE"), not gated. Set
// KTRACE_VM_BENCH=1 to run it.
func TestHistCostVM(t *testing.T) {
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
		for i, c := range histBenchCases {
			for r := 0; r < reps; r++ {
				id := fmt.Sprintf("%d-%d", i, r)
				fmt.Fprintf(&sc, "echo @@BASE%s; %s; echo @@END-BASE%s\n", id, w, id)
				fmt.Fprintf(&sc, "echo %s >> kprobe_events; echo %s > events/b/a/trigger\n",
					vmtest.ShQuote(line), vmtest.ShQuote(c.trigger+" if comm == \"workload\""))
				fmt.Fprintf(&sc, "echo @@KERNEL%s; %s; echo @@END-KERNEL%s\n", id, w, id)
				fmt.Fprintf(&sc, "echo @@KHIST%s; cat events/b/a/hist; echo @@END-KHIST%s\n", id, id)
				sc.WriteString("echo > events/b/a/trigger; echo > kprobe_events; echo > trace\n")
				fmt.Fprintf(&sc, "echo @@KTRACE%s; /bin/ktrace --kernel host record --no-trace --trigger %s %s -w /tmp/t.txt -- %s 2>/tmp/e; cat /tmp/e; echo @@END-KTRACE%s\n",
					id, vmtest.ShQuote("b/a:"+c.trigger+" if comm == \"workload\""), vmtest.ShQuote(line), w, id)
				fmt.Fprintf(&sc, "echo @@THIST%s; cat /tmp/t.txt; echo @@END-THIST%s\n", id, id)
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
		for i, c := range histBenchCases {
			var base, ko, to []int
			for r := 0; r < reps; r++ {
				id := fmt.Sprintf("%d-%d", i, r)
				b, kn, kt := nsPerOp(s, "BASE"+id), nsPerOp(s, "KERNEL"+id), nsPerOp(s, "KTRACE"+id)
				if b == 0 || kn == 0 || kt == 0 {
					t.Errorf("%s: missing timings:\n%s", c.name, vmSection(s, "KTRACE"+id))
					continue
				}
				for _, h := range []string{"KHIST", "THIST"} {
					m := histHits.FindStringSubmatch(vmSection(s, h+id))
					if m == nil || m[1] != fmt.Sprint(calls) {
						t.Errorf("%s: %s's histogram did not count every call:\n%s", c.name, h, vmSection(s, h+id))
					}
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
			t.Logf("FIGURE %s hist-counted hit (%s, %q on %q): %d getppid calls, 2 vCPUs (TCG), median of %d: base %d ns/call; kernel hist trigger +%d ns; ktrace eBPF histogram +%d ns; ratio %.2f (runs: kernel %v, ktrace %v)",
				k.Name, c.name, c.trigger, line, calls, len(base), median(base), mko, mto, ratio, ko, to)
		}
	})
}
