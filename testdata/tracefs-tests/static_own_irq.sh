#!/bin/sh
# description: a static event hit in an interrupt is recorded whatever task the interrupt came upon: the timer interrupt that wakes a sleeping task while this shell is busy records its sched_waking (on ktrace sh the shell is the tracer itself, whose own task-context events are not traced)
cleanup() {
	echo 0 > events/sched/sched_waking/enable
	rm -f /tmp/static_own_irq.done
}
fail() { echo "FAIL: $*" >&2; cleanup; exit 1; }
rm -f /tmp/static_own_irq.done
echo > trace
echo 1 > events/sched/sched_waking/enable || fail "enable"
(sleep 0.2; echo > /tmp/static_own_irq.done) &
# Busy until the sleep is over, so that its timer interrupt comes upon
# this shell.
n=0
while [ ! -e /tmp/static_own_irq.done ] && [ $n -lt 200000 ]; do
	n=$((n + 1))
done
wait
echo 0 > events/sched/sched_waking/enable
# Hits need a running kernel: an emulated tracefs records none.
grep -q ' sched_waking: ' trace || { cleanup; exit 0; }
grep -q ' sched_waking: comm=sleep ' trace || fail "no sched_waking of sleep: $(grep ' sched_waking: ' trace | head -20)"
cleanup
