#!/bin/sh
# description: a hist trigger's life: readback, soft mode, duplicates, pause/cont, clear, busy event, removal
fail() { echo "FAIL: $*" >&2; exit 1; }
t=events/kprobes/myev/trigger
echo 'p:myev __x64_sys_sync' >> kprobe_events || fail "add kprobe"
[ "$(cat $t)" = "# Available triggers:
# traceon traceoff snapshot stacktrace enable_event disable_event enable_hist disable_hist hist" ] || fail "empty trigger file: $(cat $t)"
[ "$(cat events/kprobes/myev/enable)" = 0 ] || fail "enable before: $(cat events/kprobes/myev/enable)"
echo 'hist:keys=common_pid:vals=hitcount' > $t || fail "add hist trigger"
line='hist:keys=common_pid:vals=hitcount:sort=hitcount:size=2048'
[ "$(cat $t)" = "$line [active]" ] || fail "readback: $(cat $t)"
# A trigger puts the event in soft mode.
[ "$(cat events/kprobes/myev/enable)" = "0*" ] || fail "soft mode: $(cat events/kprobes/myev/enable)"
[ "$(cat events/kprobes/myev/hist)" = "# event histogram
#
# trigger info: $line [active]
#


Totals:
    Hits: 0
    Entries: 0
    Dropped: 0" ] || fail "hist file: $(cat events/kprobes/myev/hist)"
echo > error_log
echo 'hist:keys=common_pid' >> $t && fail "duplicate accepted"
grep -q 'hist:kprobes:myev: error: Hist trigger already exists' error_log || fail "duplicate's error_log: $(cat error_log)"
[ "$(tail -1 error_log)" = "           ^" ] || fail "duplicate's caret: $(cat error_log)"
echo 'hist:keys=common_pid:pause' >> $t || fail "pause"
[ "$(cat $t)" = "$line [paused]" ] || fail "paused readback: $(cat $t)"
echo 'hist:keys=common_pid:cont' >> $t || fail "cont"
[ "$(cat $t)" = "$line [active]" ] || fail "continued readback: $(cat $t)"
echo 'hist:keys=common_cpu:clear' >> $t && fail "clear of a missing trigger accepted"
# An event in soft mode is busy.
echo '-:myev' >> kprobe_events && fail "removed an event with a trigger"
echo '!hist:keys=common_pid' >> $t || fail "remove the trigger"
grep -q '^hist' $t && fail "trigger still there: $(cat $t)"
[ "$(cat events/kprobes/myev/enable)" = 0 ] || fail "enable after: $(cat events/kprobes/myev/enable)"
echo '-:myev' >> kprobe_events || fail "remove the event"
exit 0
