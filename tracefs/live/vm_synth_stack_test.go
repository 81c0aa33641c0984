package live

import (
	"strings"
	"testing"

	"github.com/ktrace-dev/ktrace/internal/vmtest"
)

// synthStackScript is histogram.rst's blocked-latency pattern with a
// stack: sched_switch saves the time and the kernel stack of a busybox
// that goes to sleep in a variable (common_stacktrace, 6.12), and when it
// runs again generates a synthetic event with the latency and that stack
// in an unsigned long[] field. Beside it hists keyed on the stack count
// the same switches and the system calls that led to them. 6.1 has no stack variables: its refusals are
// compared instead.
const synthStackScript = `echo 'slat pid_t pid; u64 delta; unsigned long[] stack' >> synthetic_events
echo 'hist:keys=prev_pid:ts=common_timestamp.usecs,st=common_stacktrace if prev_comm == "busybox" && prev_state == 1' >> events/sched/sched_switch/trigger
echo 'hist:keys=next_pid:delta=common_timestamp.usecs-$ts,s=$st:onmatch(sched.sched_switch).trace(slat,next_pid,$delta,$s) if next_comm == "busybox"' >> events/sched/sched_switch/trigger
echo 'hist:keys=stacktrace:vals=hitcount if prev_comm == "busybox" && prev_state == 1' >> events/sched/sched_switch/trigger
echo 'hist:keys=stacktrace if comm == "busybox"' >> events/syscalls/sys_enter_clock_nanosleep/trigger
echo 1 > events/synthetic/slat/enable
/bin/busybox sleep 0.1
/bin/busybox sleep 0.1
echo 0 > events/synthetic/slat/enable
cat trace > /tmp/tr
echo @@TRACE; sed -n '/slat:/,$p' /tmp/tr | sed 's/^.*: slat:/slat:/; s/delta=[0-9]*/delta=N/; s/pid=[0-9]*/pid=N/'; echo @@END-TRACE
echo @@TRIGGERS; cat events/sched/sched_switch/trigger; echo @@END-TRIGGERS
cat events/sched/sched_switch/hist events/syscalls/sys_enter_clock_nanosleep/hist > /tmp/h
echo @@HIST; sed 's/_pid: *[0-9]*/_pid: N/' /tmp/h; echo @@END-HIST
cat error_log > /tmp/e
echo @@ERRLOG; sed 's/^\[ *[0-9.]*\]/[T]/' /tmp/e; echo @@END-ERRLOG
t=events/sched/sched_switch/trigger
echo '!hist:keys=stacktrace:vals=hitcount if prev_comm == "busybox" && prev_state == 1' >> $t
echo '!hist:keys=next_pid:delta=common_timestamp.usecs-$ts,s=$st:onmatch(sched.sched_switch).trace(slat,next_pid,$delta,$s) if next_comm == "busybox"' >> $t
echo '!hist:keys=prev_pid:ts=common_timestamp.usecs,st=common_stacktrace if prev_comm == "busybox" && prev_state == 1' >> $t
echo '!slat' >> synthetic_events
echo '!hist:keys=stacktrace if comm == "busybox"' >> events/syscalls/sys_enter_clock_nanosleep/trigger
echo @@LEFT; cat $t; echo @@END-LEFT
`

// TestSynthStackLiveVM runs synthStackScript on each pinned kernel's
// tracefs and under ktrace sh with the live backend in the same boot: on
// 6.12 the same synthetic events with the same stacks, frame for frame,
// and the same stacktrace-keyed table; on both the same trigger files,
// tables and error_log (its times aside: 6.1 stamps each entry of one
// write as it logs it).
func TestSynthStackLiveVM(t *testing.T) {
	vmtest.Require(t)
	kt := vmtest.Ktrace(t)
	vmtest.ForEachKernel(t, func(t *testing.T, k vmtest.Kernel) {
		s := runPairs(t, k, kt, pairScript{"", synthStackScript})
		kern, got := section(s, "KERNEL"), section(s, "KTRACE")
		if k.Name == "6.12" {
			if tr := section(kern, "TRACE"); strings.Count(tr, "stack=STACK:\n=> __schedule+") != 2 {
				t.Fatalf("the kernel generated no events with stacks (test premise):\n%s", kern)
			}
		}
		for _, sec := range []string{"TRACE", "TRIGGERS", "HIST", "ERRLOG", "LEFT"} {
			if w, g := section(kern, sec), section(got, sec); g != w {
				t.Errorf("%s:\n%s\nkernel's:\n%s\nstderr:\n%s", sec, g, w, section(s, "ERR"))
			}
		}
		t.Logf("%s: kernel's trace:\n%s", k.Name, section(kern, "TRACE"))
	})
}
