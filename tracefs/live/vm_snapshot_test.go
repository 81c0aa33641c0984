package live

import (
	"strings"
	"testing"

	"github.com/ktrace-dev/ktrace/internal/vmtest"
)

// snapshotScript fires snapshot triggers on a static event: alone (the
// swap comes before the firing hit's record, which goes into the new
// trace), with a filter or beside a filtered trigger (the record was
// reserved first and is swapped aside with the trace), with a count, and
// after the spare buffer was freed (the kernel writes why into the trace
// and stops tracing); a hist trigger's snapshot() action (the kernel's
// conditional snapshot: the spare buffer cannot be freed meanwhile, and
// the hist file tells which hit took it). Lines are printed without their
// times and pids.
const snapshotScript = `t=events/syscalls/sys_enter_sync/trigger
e=events/syscalls/sys_enter_sync/enable
strip() { sed 's/^ *[^ ]*-[0-9]* *\[[0-9]*\] [^ ]* *[0-9.]*: /: /'; }
count() { echo "$1: snapshot $(grep -c 'sys_sync()' snapshot) trace $(grep -c 'sys_sync()' trace) $(grep entries snapshot trace | tr '\n' ' ')"; }
run() {
	echo 0 > snapshot; echo > trace
	echo 1 > $e
	sync
	echo "$1" >> $t
	[ -n "$2" ] && echo "$2" >> $t
	sync
	sync
	echo 0 > $e
	count "$1 $2"
	cat $t
	echo '!snapshot' >> $t
	[ -n "$2" ] && echo "!$2" >> $t
}
run 'snapshot:1'
run 'snapshot:1 if common_pid != 0'
run 'snapshot:1' 'traceon if common_pid == 1234567'
run 'snapshot'
echo 0 > snapshot; echo > trace
echo snapshot >> $t
echo 0 > snapshot
echo 1 > $e
sync
sync
echo 0 > $e
echo "freed: tracing_on $(cat tracing_on)"
grep -v '^#' trace | strip
head -4 snapshot | tail -1
echo '!snapshot' >> $t
echo 1 > tracing_on
echo > trace
w=events/sched/sched_waking/trigger
h='hist:keys=comm:p=pid:onchange($p).snapshot() if comm=="sleep"'
echo 1 > events/sched/sched_waking/enable
echo "$h" >> $w
echo "free with snapshot(): $( { echo 0 > snapshot; } 2>&1 )"
sleep 0.05
echo 0 > events/sched/sched_waking/enable
cat events/sched/sched_waking/hist | sed 's/[0-9][0-9]*/N/g'
echo "sleep woken: snapshot $(grep -c 'sched_waking: comm=sleep' snapshot) trace $(grep -c 'sched_waking: comm=sleep' trace)"
echo "!$h" >> $w
echo 0 > snapshot
echo > trace
`

// TestSnapshotLiveVM runs snapshotScript on each pinned kernel's tracefs
// and under ktrace sh in the same boot: the same records on each side of
// each swap, the same counts and trigger files.
func TestSnapshotLiveVM(t *testing.T) {
	vmtest.Require(t)
	kt := vmtest.Ktrace(t)
	vmtest.ForEachKernel(t, func(t *testing.T, k vmtest.Kernel) {
		s := runPairs(t, k, kt, pairScript{"", snapshotScript})
		kern, got := section(s, "KERNEL"), section(s, "KTRACE")
		if !strings.Contains(kern, "snapshot:1 : snapshot 1 trace 2") {
			t.Fatalf("the kernel's snapshot trigger did not swap as expected (test premise):\n%s", kern)
		}
		if got != kern {
			t.Errorf("ktrace:\n%s\nkernel's:\n%s\nstderr:\n%s", got, kern, section(s, "ERR"))
		}
	})
}
