#!/bin/sh
# description: an event's filter goes with the event: a new event of the same name (and, on 6.12, the same reused ID) starts with none
fail() { echo "FAIL: $*" >&2; exit 1; }
echo 'p:myev vfs_read' >> kprobe_events || fail "add failed"
echo 'common_pid != 0' > events/kprobes/myev/filter || fail "set filter failed"
test "$(cat events/kprobes/myev/filter)" = 'common_pid != 0' || fail "filter not set: $(cat events/kprobes/myev/filter)"
echo '-:myev' >> kprobe_events || fail "remove failed"
echo 'p:myev vfs_read' >> kprobe_events || fail "re-add failed"
test "$(cat events/kprobes/myev/filter)" = 'none' || fail "filter survived the event: $(cat events/kprobes/myev/filter)"
echo '-:myev' >> kprobe_events
exit 0
