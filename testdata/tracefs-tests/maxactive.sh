#!/bin/sh
# description: r<maxactive> is kept in the readback; a huge maxactive is refused
fail() { echo "FAIL: $*" >&2; exit 1; }
echo 'r10:myret vfs_read' >> kprobe_events || fail "add failed"
[ "$(cat kprobe_events)" = 'r10:kprobes/myret vfs_read' ] || fail "readback: $(cat kprobe_events)"
echo > kprobe_events
echo > error_log
if echo 'r5000:myret vfs_read' >> kprobe_events 2>/dev/null; then fail "maxactive 5000 accepted"; fi
grep -q 'Maxactive is too big' error_log || fail "error_log: $(cat error_log)"
exit 0
