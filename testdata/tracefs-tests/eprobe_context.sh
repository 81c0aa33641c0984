#!/bin/sh
# description: an event probe's record shows the context of the tracepoint hit it was made from, one preemption level deeper than the tracepoint's own record: on softirq_entry 's' in the third column, on sched_switch interrupts off at depth 3 ("d..3."), on a task's sys_enter_read depth 2
cleanup() {
	echo 0 > events/enable
	echo > dynamic_events
}
fail() { echo "FAIL: $*" >&2; cleanup; exit 1; }
echo 'e:epc/soft irq.softirq_entry' >> dynamic_events || fail "eprobe on softirq_entry"
echo 'e:epc/sw sched.sched_switch' >> dynamic_events || fail "eprobe on sched_switch"
echo 'e:epc/rd syscalls.sys_enter_read' >> dynamic_events || fail "eprobe on sys_enter_read"
echo > trace
echo 1 > events/epc/enable
# Wait for a softirq, up to 3 s.
n=0
while [ $n -lt 10 ]; do
	sleep 0.3
	grep -q ' soft: ' trace && break
	n=$((n + 1))
done
dd if=/proc/version of=/dev/null bs=16 count=2 2>/dev/null
echo 0 > events/epc/enable
# flags EVENT [TASK]: the flags column of EVENT's lines (of TASK's).
flags() { sed -n "s/^ *${2:-.*}-[0-9]* .*\] \([^ ]*\) *[0-9.]*: $1: .*/\1/p" < trace; }
# Hits need a running kernel: an emulated tracefs records none.
[ -n "$(flags sw)" ] || { cleanup; exit 0; }
check() { # EVENT PATTERN WHAT [TASK]
	f=$(flags $1 $4)
	[ -n "$f" ] || fail "no $1 record: $(grep -v '^#' trace | head -20)"
	for x in $f; do
		case $x in $2) ;; *) fail "$1 recorded with flags $x, not $3: $(grep " $1: " trace | head -20)" ;; esac
	done
}
check soft '?[.Nnp][sH]??' "in a softirq"
check sw 'd[.Nnp].3.' "interrupts off at depth 3"
check rd '.[.Nnp].2.' "a task's at depth 2" dd
cleanup
