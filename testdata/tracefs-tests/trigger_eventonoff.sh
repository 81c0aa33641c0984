#!/bin/sh
# description: enable_event and disable_event triggers: readback with target and count, the target in soft mode (0* or 1*), one per target (EEXIST), unknown targets and bad syntax refused, removal by !; with event hits, the trigger switches the target on or off and its count runs down (sys_enter_sync fires them: sync)
# flags: instance
fail() { echo "FAIL: $*" >&2; cleanup; exit 1; }
t=events/syscalls/sys_enter_sync/trigger
cleanup() {
	for c in enable_event:sched:sched_process_exit enable_event:sched:sched_process_fork enable_event:sched:sched_process_free; do echo "!$c" >> $t; done 2>/dev/null
	echo 0 > events/sched/sched_process_exit/enable; echo 0 > events/sched/sched_process_fork/enable
}
empty="# Available triggers:
# traceon traceoff snapshot stacktrace enable_event disable_event enable_hist disable_hist hist"
en() { cat events/sched/$1/enable; }
en2() { cat events/syscalls/sys_enter_sync/enable; }
echo 'enable_event:sched:sched_process_exit' >> $t || fail "add enable_event"
echo 'disable_event:sched:sched_process_fork:2' >> $t || fail "add disable_event with a count"
exp="disable_event:sched:sched_process_fork:count=2
enable_event:sched:sched_process_exit:unlimited"
[ "$(cat $t)" = "$exp" ] || fail "readback: $(cat $t)"
# The targets go to soft mode, the event with triggers too.
[ "$(en sched_process_exit)" = "0*" ] || fail "enable target: $(en sched_process_exit)"
[ "$(en sched_process_fork)" = "0*" ] || fail "disable target: $(en sched_process_fork)"
[ "$(en2)" = "0*" ] || fail "triggering event: $(en2)"
for c in 'enable_event:sched:sched_process_exit' 'disable_event:sched:sched_process_exit' 'enable_event:sched:sched_process_fork:5'; do
	out=$( { echo "$c" >> $t; } 2>&1 ) && fail "second trigger on one target accepted: $c"
	case $out in *"File exists"*) ;; *) fail "$c: want EEXIST, got: $out" ;; esac
done
for c in 'enable_event:nogroup:noevent' 'enable_event:sched:nosuch' 'disable_event+1' 'enable_event' 'enable_event:sched' 'enable_event:sched:sched_process_free:x'; do
	out=$( { echo "$c" >> $t; } 2>&1 ) && fail "accepted: $c"
	case $out in *"Invalid argument"*) ;; *) fail "$c: want EINVAL, got: $out" ;; esac
done
[ "$(cat $t)" = "$exp" ] || fail "after the refused writes: $(cat $t)"
# Removal names the command and the target.
echo '!disable_event:sched:sched_process_fork' >> $t || fail "remove disable_event"
[ "$(cat $t)" = "enable_event:sched:sched_process_exit:unlimited" ] || fail "after removal: $(cat $t)"
[ "$(en sched_process_fork)" = 0 ] || fail "removed target still soft: $(en sched_process_fork)"
echo '!enable_event:sched:sched_process_exit' >> $t || fail "remove enable_event"
[ "$(cat $t)" = "$empty" ] || fail "after both removals: $(cat $t)"
[ "$(en sched_process_exit)" = 0 ] || fail "target still soft: $(en sched_process_exit)"
[ "$(en2)" = 0 ] || fail "triggering event still soft: $(en2)"
# A hard-enabled target shows 1*.
echo 1 > events/sched/sched_process_fork/enable
echo 'disable_event:sched:sched_process_fork' >> $t || fail "add disable_event"
[ "$(en sched_process_fork)" = "1*" ] || fail "enabled target: $(en sched_process_fork)"
echo '!disable_event:sched:sched_process_fork' >> $t
echo 0 > events/sched/sched_process_fork/enable
# Hits need a running kernel: ktrace --kernel SNAPSHOT emulates the
# files and records no event, so the checks end here there.
echo > trace
echo 1 > events/syscalls/sys_enter_sync/enable
sync
grep -q 'sys_sync()' trace; seen=$?
echo 0 > events/syscalls/sys_enter_sync/enable
[ $seen = 0 ] || exit 0
echo 'enable_event:sched:sched_process_exit:1' >> $t || fail "add enable_event:1"
sync
[ "$(en sched_process_exit)" = "1*" ] || fail "enable_event did not enable its target: $(en sched_process_exit)"
[ "$(cat $t)" = "enable_event:sched:sched_process_exit:count=0" ] || fail "count after a hit: $(cat $t)"
echo > trace
dd if=/dev/zero of=/dev/null count=1 2>/dev/null
grep -q 'sched_process_exit:' trace || fail "the enabled target recorded nothing: $(cat trace)"
# The target a fired enable_event turned on stays on when the trigger
# goes (its soft-disable bit was cleared; soft mode ends, enabled).
echo '!enable_event:sched:sched_process_exit' >> $t || fail "remove enable_event"
[ "$(en sched_process_exit)" = 1 ] || fail "target after removal: $(en sched_process_exit)"

echo 'disable_event:sched:sched_process_exit' >> $t || fail "add disable_event"
sync
[ "$(en sched_process_exit)" = "0*" ] || fail "disable_event did not disable its target: $(en sched_process_exit)"
echo > trace
dd if=/dev/zero of=/dev/null count=1 2>/dev/null
grep -q 'sched_process_exit:' trace && fail "the disabled target recorded: $(cat trace)"
# And the target a fired disable_event turned off stays off, though it
# was enabled before the trigger came.
echo '!disable_event:sched:sched_process_exit' >> $t || fail "remove disable_event"
[ "$(en sched_process_exit)" = 0 ] || fail "disable_event's target after removal: $(en sched_process_exit)"

exit 0
