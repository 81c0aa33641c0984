#!/bin/sh
# description: kprobes show in dynamic_events, which can remove and truncate them too
fail() { echo "FAIL: $*" >&2; exit 1; }
echo 'p:ev1 vfs_read' >> kprobe_events || fail "add ev1"
echo 'p:ev2 vfs_write' >> dynamic_events || fail "add ev2 via dynamic_events"
[ "$(cat dynamic_events)" = "$(printf 'p:kprobes/ev1 vfs_read\np:kprobes/ev2 vfs_write')" ] || fail "dynamic_events: $(cat dynamic_events)"
echo '-:kprobes/ev1' >> dynamic_events || fail "remove via dynamic_events"
[ "$(cat kprobe_events)" = "p:kprobes/ev2 vfs_write" ] || fail "kprobe_events: $(cat kprobe_events)"
echo > dynamic_events || fail "truncate dynamic_events"
[ -z "$(cat kprobe_events)" ] || fail "not cleared: $(cat kprobe_events)"
exit 0
