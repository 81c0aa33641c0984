#!/bin/sh
# description: a static event's record shows the context its tracepoint was hit in, as the kernel takes it (tracing_gen_ctx_dec, but tracing_gen_ctx for the syscalls events): softirq_entry runs in a softirq ('s' in the third column, interrupts on), hrtimer_expire_entry with interrupts off, in a hardirq when a timer interrupt runs it ('h'), sched_switch with interrupts off two levels deep ("d..2."), a task's raw_syscalls sys_enter at depth 0 and its syscalls sys_enter_read at depth 1; a filtered event (a program of its own) records the same
cleanup() {
	echo 0 > events/enable
	echo 0 > events/irq/softirq_entry/filter
}
fail() { echo "FAIL: $*" >&2; cleanup; exit 1; }
echo 'vec < 10' > events/irq/softirq_entry/filter || fail "filter"
echo > trace
for e in irq/softirq_entry timer/hrtimer_expire_entry sched/sched_switch raw_syscalls/sys_enter syscalls/sys_enter_read; do
	echo 1 > events/$e/enable || fail "enable $e"
done
# Wait for a softirq and a timer interrupt, up to 3 s.
n=0
while [ $n -lt 10 ]; do
	sleep 0.3
	grep -q ' softirq_entry: ' trace && grep -q ' hrtimer_expire_entry: ' trace && break
	n=$((n + 1))
done
dd if=/proc/version of=/dev/null bs=16 count=2 2>/dev/null
echo 0 > events/enable
# flags EVENT [TASK]: the flags column of EVENT's lines (of TASK's), one
# per line.
flags() { sed -n "s/^ *${2:-.*}-[0-9]* .*\] \([^ ]*\) *[0-9.]*: $1[:(].*/\1/p" < trace; }
# Hits need a running kernel: an emulated tracefs records none.
[ -n "$(flags sched_switch)" ] || { cleanup; exit 0; }
check() { # EVENT PATTERN WHAT [TASK]
	f=$(flags $1 $4)
	[ -n "$f" ] || fail "no $1 record: $(grep -v '^#' trace | head -20)"
	for x in $f; do
		case $x in $2) ;; *) fail "$1 recorded with flags $x, not $3: $(grep " $1[:(]" trace | head -20)" ;; esac
	done
}
check softirq_entry '?[.Nnp][sH]??' "in a softirq"
check hrtimer_expire_entry '[dD]????' "interrupts off"
check sched_switch 'd[.Nnp].2.' "interrupts off at depth 2"
check sys_enter '.[.Nnp]...' "a task's at depth 0" dd
check sys_read '.[.Nnp].1.' "a task's at depth 1" dd
grep -q '\] [dD].[hH][^ ]* .* hrtimer_expire_entry: ' trace || fail "no hrtimer_expire_entry record in a hardirq: $(grep ' hrtimer_expire_entry: ' trace | head)"
cleanup
