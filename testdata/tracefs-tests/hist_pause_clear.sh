#!/bin/sh
# description: hist counting with event hits: a paused trigger counts nothing, cont resumes, clear empties the table and keeps the state, a trigger added paused starts empty; enable_hist and disable_hist on another event pause and resume it (with counts); each sync is one hit of sys_enter_sync
# flags: instance
s=events/syscalls/sys_enter_sync
k=hist:keys=__syscall_nr
fail() { echo "FAIL: $*" >&2; { echo > $s/trigger; echo > events/sched/sched_process_fork/trigger; } 2>/dev/null; exit 1; }
# Hits need a running kernel: ktrace --kernel SNAPSHOT emulates the
# files and records no event, so this script checks nothing there.
echo > trace
echo 1 > events/syscalls/sys_enter_sync/enable
sync
grep -q 'sys_sync()' trace; seen=$?
echo 0 > events/syscalls/sys_enter_sync/enable
[ $seen = 0 ] || exit 0
# hits N STATE: the table counts N hits in one entry (none for 0), and
# the trigger is STATE.
hits() {
	h=$(cat $s/hist)
	echo "$h" | grep -q "^# trigger info: $k:vals=hitcount:sort=hitcount:size=2048 \[$2\]$" || fail "want $2: $h"
	echo "$h" | grep -q "^    Hits: $1$" || fail "want $1 hits: $h"
	if [ "$1" = 0 ]; then
		echo "$h" | grep -q '^    Entries: 0$' || fail "want no entry: $h"
	else
		echo "$h" | grep -q "^{ __syscall_nr: *[0-9]* } hitcount: *$1$" || fail "want one entry of $1: $h"
	fi
}
echo "$k:pause" >> $s/trigger || fail "add paused"
hits 0 paused
sync; sync
hits 0 paused
echo "$k:cont" >> $s/trigger || fail "cont"
sync; sync; sync
hits 3 active
echo "$k:pause" >> $s/trigger || fail "pause"
sync
hits 3 paused
echo "$k:clear" >> $s/trigger || fail "clear while paused"
hits 0 paused
echo "$k:continue" >> $s/trigger || fail "continue"
sync
hits 1 active
echo "$k:clear" >> $s/trigger || fail "clear while active"
hits 0 active
sync; sync
hits 2 active
# disable_hist:1 on sched_process_fork pauses the table at the next
# fork (dd), then enable_hist resumes it.
p=events/sched/sched_process_fork/trigger
echo 'disable_hist:syscalls:sys_enter_sync:1' >> $p || fail "add disable_hist"
dd if=/dev/zero of=/dev/null count=1 2>/dev/null
hits 2 paused
[ "$(cat $p)" = "disable_hist:syscalls:sys_enter_sync:count=0" ] || fail "disable_hist count: $(cat $p)"
sync
hits 2 paused
echo '!disable_hist:syscalls:sys_enter_sync' >> $p || fail "remove disable_hist"
echo 'enable_hist:syscalls:sys_enter_sync' >> $p || fail "add enable_hist"
dd if=/dev/zero of=/dev/null count=1 2>/dev/null
hits 2 active
sync
hits 3 active
echo '!enable_hist:syscalls:sys_enter_sync' >> $p || fail "remove enable_hist"
echo "!$k" >> $s/trigger || fail "remove"
exit 0
