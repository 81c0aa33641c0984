#!/bin/sh
# description: opening kprobe_events with O_TRUNC removes every kprobe event
fail() { echo "FAIL: $*" >&2; exit 1; }
echo 'p:ev1 vfs_read' >> kprobe_events || fail "add ev1"
echo 'p:ev2 vfs_write' >> kprobe_events || fail "add ev2"
[ "$(wc -l < kprobe_events)" -eq 2 ] || fail "want 2 lines: $(cat kprobe_events)"
echo > kprobe_events || fail "truncate failed"
[ -z "$(cat kprobe_events)" ] || fail "not cleared: $(cat kprobe_events)"
[ ! -d events/kprobes ] || fail "events/kprobes survived"
echo 'p:ev3 vfs_read' > kprobe_events || fail "truncating add failed"
[ "$(cat kprobe_events)" = "p:kprobes/ev3 vfs_read" ] || fail "readback: $(cat kprobe_events)"
: > kprobe_events
[ -z "$(cat kprobe_events)" ] || fail "': >' did not clear"
exit 0
