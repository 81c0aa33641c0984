package live

import (
	"strings"
	"testing"

	"github.com/ktrace-dev/ktrace/internal/vmtest"
)

// staticFilterScript filters a static event of the kernel (its program
// of its own runs the filter), changes the filter while it is enabled,
// disables and enables it again at once, and reads the trace after a
// disable: what was recorded before stays.
const staticFilterScript = `echo 'comm == "dd"' > events/sched/sched_process_exit/filter
echo 1 > events/sched/sched_process_exit/enable
dd if=/dev/zero of=/dev/null count=1 2>/dev/null
sleep 0
echo 'comm == "sleep"' > events/sched/sched_process_exit/filter
dd if=/dev/zero of=/dev/null count=1 2>/dev/null
sleep 0
echo 0 > events/sched/sched_process_exit/enable
echo 1 > events/sched/sched_process_exit/enable
echo "enable $?"
echo 0 > events/sched/sched_process_exit/filter
echo 'comm ~ "d?"' > events/sched/sched_process_exit/filter
dd if=/dev/zero of=/dev/null count=1 2>/dev/null
sleep 0
echo 0 > events/sched/sched_process_exit/enable
echo @@TRACE; grep -E 'sched_process_exit' trace | sed 's/^ *[^ ]* *\[[0-9]*\] [^ ]* *[0-9.]*: //; s/pid=[0-9]*/pid=N/'; echo @@END-TRACE
echo @@FILTER; cat events/sched/sched_process_exit/filter; echo @@END-FILTER
echo 0 > events/sched/sched_process_exit/filter
echo > trace
`

// TestStaticFilterLiveVM runs staticFilterScript on each pinned kernel's
// tracefs and under ktrace sh in the same boot: the same exits traced.
func TestStaticFilterLiveVM(t *testing.T) {
	vmtest.Require(t)
	kt := vmtest.Ktrace(t)
	vmtest.ForEachKernel(t, func(t *testing.T, k vmtest.Kernel) {
		s := runPairs(t, k, kt, pairScript{"", staticFilterScript})
		kern, got := section(s, "KERNEL"), section(s, "KTRACE")
		if strings.Count(section(kern, "TRACE"), "comm=dd") != 2 || strings.Count(section(kern, "TRACE"), "comm=sleep") != 1 {
			t.Fatalf("the kernel's filter did not pick the exits (test premise):\n%s", kern)
		}
		for _, sec := range []string{"TRACE", "FILTER"} {
			if w, g := section(kern, sec), section(got, sec); g != w {
				t.Errorf("%s:\n%s\nkernel's:\n%s\nstderr:\n%s", sec, g, w, section(s, "ERR"))
			}
		}
		if !strings.Contains(got, "enable 0") {
			t.Errorf("enabling again at once failed:\n%s\nstderr:\n%s", got, section(s, "ERR"))
		}
	})
}
