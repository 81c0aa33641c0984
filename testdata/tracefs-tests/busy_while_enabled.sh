#!/bin/sh
# description: an enabled event cannot be removed, nor kprobe_events truncated (EBUSY)
fail() { echo "FAIL: $*" >&2; exit 1; }
echo 'p:myev vfs_read' >> kprobe_events || fail "add failed"
echo 1 > events/kprobes/myev/enable || fail "enable failed"
out=$( { echo '-:myev' >> kprobe_events; } 2>&1 ) && fail "removed while enabled"
case $out in *"Device or resource busy"*) ;; *) fail "want EBUSY, got: $out" ;; esac
out=$( { echo > kprobe_events; } 2>&1 ) && fail "truncated while enabled"
case $out in *"Device or resource busy"*) ;; *) fail "want EBUSY, got: $out" ;; esac
[ "$(cat kprobe_events)" = "p:kprobes/myev vfs_read" ] || fail "readback: $(cat kprobe_events)"
echo 0 > events/kprobes/myev/enable || fail "disable failed"
echo '-:myev' >> kprobe_events || fail "remove after disable failed"
exit 0
