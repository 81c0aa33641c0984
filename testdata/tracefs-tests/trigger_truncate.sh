#!/bin/sh
# description: opening a trigger file with O_TRUNC (echo >) removes the event's hist, enable_hist and disable_hist triggers and keeps the others; the enable_hist target leaves soft mode; the empty line written then is refused
# flags: instance
fail() { echo "FAIL: $*" >&2; cleanup; exit 1; }
t=events/syscalls/sys_enter_sync/trigger
cleanup() {
	for c in traceon stacktrace enable_event:sched:sched_process_exit; do echo "!$c" >> $t; done 2>/dev/null
	echo > $t 2>/dev/null
}
empty="# Available triggers:
# traceon traceoff snapshot stacktrace enable_event disable_event enable_hist disable_hist hist"
for c in 'hist:keys=common_pid' traceon 'enable_hist:sched:sched_process_exit' 'enable_event:sched:sched_process_exit' 'disable_hist:sched:sched_process_fork:2'; do
	echo "$c" >> $t || fail "add $c"
done
exp="disable_hist:sched:sched_process_fork:count=2
enable_event:sched:sched_process_exit:unlimited
enable_hist:sched:sched_process_exit:unlimited
traceon:unlimited
hist:keys=common_pid:vals=hitcount:sort=hitcount:size=2048 [active]"
[ "$(cat $t)" = "$exp" ] || fail "readback: $(cat $t)"
[ "$(cat events/sched/sched_process_fork/enable)" = "0*" ] || fail "disable_hist target: $(cat events/sched/sched_process_fork/enable)"
echo stacktrace > $t || fail "truncating write of stacktrace"
exp="stacktrace:unlimited
enable_event:sched:sched_process_exit:unlimited
traceon:unlimited"
[ "$(cat $t)" = "$exp" ] || fail "after the truncating write: $(cat $t)"
[ "$(cat events/sched/sched_process_fork/enable)" = 0 ] || fail "disable_hist target after truncation: $(cat events/sched/sched_process_fork/enable)"
[ "$(cat events/sched/sched_process_exit/enable)" = "0*" ] || fail "enable_event target after truncation: $(cat events/sched/sched_process_exit/enable)"
out=$( { echo > $t; } 2>&1 ) && fail "empty line accepted"
case $out in *"Invalid argument"*) ;; *) fail "empty line: want EINVAL, got: $out" ;; esac
[ "$(cat $t)" = "$exp" ] || fail "after echo >: $(cat $t)"
for c in traceon stacktrace enable_event:sched:sched_process_exit; do echo "!$c" >> $t || fail "remove $c"; done
[ "$(cat $t)" = "$empty" ] || fail "after the removals: $(cat $t)"
[ "$(cat events/syscalls/sys_enter_sync/enable)" = 0 ] || fail "soft mode left: $(cat events/syscalls/sys_enter_sync/enable)"
exit 0
