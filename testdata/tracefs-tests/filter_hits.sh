#!/bin/sh
# description: an event filter decides which hits are recorded: numeric, string and glob comparisons pass or drop an exiting process's event; a write that fails to parse leaves the event unfiltered (the kernel disables the filter and shows the error); 0 clears
# flags: instance
fail() { echo "FAIL: $*" >&2; echo 0 > $f; echo 0 > events/sched/sched_process_exit/enable; exit 1; }
f=events/sched/sched_process_exit/filter
# Hits need a running kernel: ktrace --kernel SNAPSHOT emulates the
# files and records no event, so this script checks nothing there.
echo > trace
echo 1 > events/syscalls/sys_enter_sync/enable
sync
grep -q 'sys_sync()' trace; seen=$?
echo 0 > events/syscalls/sys_enter_sync/enable
[ $seen = 0 ] || exit 0
echo 1 > events/sched/sched_process_exit/enable
# passes FILTER: a process's exit is recorded under FILTER; drops FILTER:
# none is.
run() {
	echo > trace
	dd if=/dev/zero of=/dev/null count=1 2>/dev/null
}
passes() {
	echo "$1" > $f || fail "refused: $1"
	run
	grep -q 'sched_process_exit: ' trace || fail "no exit recorded under $1"
}
drops() {
	echo "$1" > $f || fail "refused: $1"
	run
	grep -q 'sched_process_exit: ' trace && fail "an exit recorded under $1: $(grep sched_process_exit trace)"
}
drops 'pid == 0'
passes 'pid != 0'
passes 'prio >= 0 && pid > 1'
drops 'prio < 0 || pid == 0'
drops 'comm == "no-such-comm"'
passes 'comm != "no-such-comm"'
drops 'comm ~ "no-such*"'
passes 'comm ~ "*"'
drops '!(pid != 0)'
drops 'pid & 0'
# A filter that does not parse replaces the old one, disabled: every
# hit passes, and the file shows the error.
echo 'pid == 0' > $f
echo 'pid == abc' > $f 2>/dev/null && fail "accepted pid == abc"
grep -q '^parse_error: ' $f || fail "no error in the filter file: $(cat $f)"
run
grep -q 'sched_process_exit: ' trace || fail "hits dropped after a failed filter write"
drops 'pid == 0'
echo 0 > $f || fail "clear"
[ "$(cat $f)" = none ] || fail "after clear: $(cat $f)"
run
grep -q 'sched_process_exit: ' trace || fail "hits dropped after the filter was cleared"
echo 0 > events/sched/sched_process_exit/enable
echo > trace
exit 0
