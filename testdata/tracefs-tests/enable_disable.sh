#!/bin/sh
# description: events/GROUP/EVENT/enable and the group enable file follow each other
fail() { echo "FAIL: $*" >&2; exit 1; }
echo 'p:ev1 vfs_read' >> kprobe_events || fail "add ev1"
echo 'p:ev2 vfs_write' >> kprobe_events || fail "add ev2"
[ "$(cat events/kprobes/ev1/enable)" = 0 ] || fail "ev1 enabled at start"
echo 1 > events/kprobes/ev1/enable || fail "enable ev1"
[ "$(cat events/kprobes/ev1/enable)" = 1 ] || fail "ev1 not enabled"
[ "$(cat events/kprobes/enable)" = X ] || fail "group enable: $(cat events/kprobes/enable)"
echo 1 > events/kprobes/enable || fail "enable group"
[ "$(cat events/kprobes/ev2/enable)" = 1 ] || fail "ev2 not enabled by group"
[ "$(cat events/kprobes/enable)" = 1 ] || fail "group enable: $(cat events/kprobes/enable)"
echo 2 > events/kprobes/ev1/enable 2>/dev/null && fail "enable=2 accepted"
echo 0 > events/kprobes/enable || fail "disable group"
[ "$(cat events/kprobes/ev1/enable)" = 0 ] || fail "ev1 still enabled"
echo > kprobe_events || fail "clear"
exit 0
