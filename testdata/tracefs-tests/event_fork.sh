#!/bin/sh
# description: options/event-fork makes set_event_pid and set_event_notrace_pid follow forks: a child of a listed task is traced (or, notrace, not) while the option is on; off, only the listed task counts
# flags: instance
cleanup() {
	echo 0 > events/sched/sched_process_exit/enable
	echo 0 > options/event-fork
	echo > set_event_pid; echo > set_event_notrace_pid
}
fail() { echo "FAIL: $*" >&2; cleanup; exit 1; }
[ "$(cat options/event-fork)" = 0 ] || fail "default: $(cat options/event-fork)"
grep -qx noevent-fork trace_options || fail "trace_options: $(grep event-fork trace_options)"
echo 1 > options/event-fork || fail "set"
grep -qx event-fork trace_options || fail "trace_options after set: $(grep event-fork trace_options)"
echo 0 > options/event-fork || fail "clear"
# Hits need a running kernel: ktrace --kernel SNAPSHOT emulates the
# files and records no event, so this script checks no more there.
echo > trace
echo 1 > events/syscalls/sys_enter_sync/enable
sync
grep -q 'sys_sync()' trace; seen=$?
echo 0 > events/syscalls/sys_enter_sync/enable
[ $seen = 0 ] || exit 0
read mypid rest < /proc/self/stat
exits() { # the children's exits recorded by a dd run from here
	echo > trace
	dd if=/dev/zero of=/dev/null count=1 2>/dev/null
	grep 'sched_process_exit: ' trace | grep -v "pid=$mypid " | grep -c 'comm=dd'
}
echo $mypid > set_event_pid
echo 1 > events/sched/sched_process_exit/enable
[ "$(exits)" = 0 ] || fail "a child traced without event-fork: $(cat trace)"
echo 1 > options/event-fork
[ "$(exits)" = 1 ] || fail "the child not traced with event-fork: $(cat trace)"
echo > set_event_pid
echo $mypid > set_event_notrace_pid
[ "$(exits)" = 0 ] || fail "a child of a notrace task traced: $(cat trace)"
echo 0 > options/event-fork
[ "$(exits)" = 1 ] || fail "the child not traced without event-fork: $(cat trace)"
cleanup
exit 0
