#!/bin/sh
# description: string keys: a static char[16] key takes 16 bytes of the 384-byte compound key, so two of them and a number fit (sched_process_fork's child_comm, parent_comm, child_pid), while two dynamic strings (256 bytes each) are refused with EINVAL and no error_log entry; with event hits the table prints each string key in 50 columns
# flags: instance
f=events/sched/sched_process_fork
fail() { echo "FAIL: $*" >&2; { echo > $f/trigger; echo '-:kprobes/hsk' >> kprobe_events; } 2>/dev/null; exit 1; }
echo 'hist:keys=child_comm,parent_comm' >> $f/trigger || fail "two static strings"
echo 'hist:keys=child_comm,parent_comm,child_pid:vals=hitcount' >> $f/trigger || fail "two static strings and a number"
exp="hist:keys=child_comm,parent_comm:vals=hitcount:sort=hitcount:size=2048 [active]
hist:keys=child_comm,parent_comm,child_pid:vals=hitcount:sort=hitcount:size=2048 [active]"
[ "$(cat $f/trigger)" = "$exp" ] || fail "readback: $(cat $f/trigger)"
if [ -w kprobe_events ]; then
	echo 'p:hsk do_sys_openat2 a=+0($arg2):string b=+0($arg2):string' >> kprobe_events || fail "the kprobe"
	echo > error_log
	echo 'hist:keys=a,b' >> events/kprobes/hsk/trigger 2>/dev/null && fail "accepted two dynamic string keys"
	[ -z "$(cat error_log)" ] || fail "error_log: $(cat error_log)"
	echo 'hist:keys=a,common_pid' >> events/kprobes/hsk/trigger || fail "a dynamic string and a number"
	echo > events/kprobes/hsk/trigger 2>/dev/null
	echo '-:kprobes/hsk' >> kprobe_events || fail "removing the kprobe"
fi
# Hits need a running kernel: ktrace --kernel SNAPSHOT emulates the
# files and records no event, so the checks end here there.
echo > trace
echo 1 > events/syscalls/sys_enter_sync/enable
sync
grep -q 'sys_sync()' trace; seen=$?
echo 0 > events/syscalls/sys_enter_sync/enable
[ $seen = 0 ] || { echo > $f/trigger 2>/dev/null; exit 0; }
for i in 1 2 3; do sh -c 'true'; done
h=$(cat $f/hist)
echo "$h" | grep -Eq '^\{ child_comm: .{50}, parent_comm: .{50} \} hitcount: +[1-9][0-9]*$' || fail "two-key table: $h"
echo "$h" | grep -Eq '^\{ child_comm: .{50}, parent_comm: .{50}, child_pid: +[0-9]+ \} hitcount: +1$' || fail "three-key table: $h"
echo > $f/trigger 2>/dev/null
exit 0
