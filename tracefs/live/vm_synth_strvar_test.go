package live

import (
	"strings"
	"testing"

	"github.com/ktrace-dev/ktrace/internal/vmtest"
)

// strVarScript passes strings through hist variables: sched_waking keeps
// the waking task's comm in a variable of its entry with the timestamp,
// sched_switch generates a synthetic event with the latency and that
// variable (into a static char[16] field), and another from a variable of
// its own, the next task's comm (into a dynamic char[] field). The
// sleeping processes run busybox by path: both shells fork and exec it.
const strVarScript = `echo 'svs u64 lat; char comm[16]' >> synthetic_events
echo 'svd u64 lat; char comm[]; pid_t pid' >> synthetic_events
echo 'hist:keys=pid:ts0=common_timestamp.usecs,wc=comm if comm == "busybox"' >> events/sched/sched_waking/trigger
echo 'hist:keys=next_pid:lat=common_timestamp.usecs-$ts0:onmatch(sched.sched_waking).svs($lat,$wc) if next_comm == "busybox"' >> events/sched/sched_switch/trigger
echo 'hist:keys=pid:ts1=common_timestamp.usecs if comm == "busybox"' >> events/sched/sched_waking/trigger
echo 'hist:keys=next_pid:nc=next_comm,l2=common_timestamp.usecs-$ts1:onmatch(sched.sched_waking).svd($l2,$nc,next_pid) if next_comm == "busybox"' >> events/sched/sched_switch/trigger
echo 1 > events/synthetic/svs/enable
echo 1 > events/synthetic/svd/enable
/bin/busybox sleep 0.1
/bin/busybox sleep 0.1
/bin/busybox sleep 0.1
echo 0 > events/synthetic/svs/enable
echo 0 > events/synthetic/svd/enable
echo @@TRACE; grep -E 'sv[sd]:' trace | sed 's/^.*: \(sv[sd]:\)/\1/; s/lat=[0-9]*/lat=N/; s/pid=[0-9]*/pid=N/'; echo @@END-TRACE
echo @@TRIGGERS; cat events/sched/sched_waking/trigger events/sched/sched_switch/trigger; echo @@END-TRIGGERS
`

// TestSynthStringVarLiveVM runs strVarScript on each pinned kernel's
// tracefs and under ktrace sh with the live backend in the same boot, and
// wants the same synthetic events, strings included, and the same
// trigger files.
func TestSynthStringVarLiveVM(t *testing.T) {
	vmtest.Require(t)
	kt := vmtest.Ktrace(t)
	vmtest.ForEachKernel(t, func(t *testing.T, k vmtest.Kernel) {
		s := runPairs(t, k, kt, pairScript{"", strVarScript})
		kern, got := section(s, "KERNEL"), section(s, "KTRACE")
		if tr := section(kern, "TRACE"); strings.Count(tr, "svs: lat=N comm=busybox") != 3 || strings.Count(tr, "svd:") != 3 {
			t.Fatalf("the kernel generated no events with strings from variables (test premise):\n%s", kern)
		}
		for _, sec := range []string{"TRACE", "TRIGGERS"} {
			if w, g := section(kern, sec), section(got, sec); g != w {
				t.Errorf("%s:\n%s\nkernel's:\n%s\nstderr:\n%s", sec, g, w, section(s, "ERR"))
			}
		}
		t.Logf("%s: kernel's trace:\n%s", k.Name, section(kern, "TRACE"))
	})
}
