#!/bin/sh
# description: the same probe twice under one name is refused; a different place appends a probe
fail() { echo "FAIL: $*" >&2; exit 1; }
echo 'p:myev vfs_read' >> kprobe_events || fail "add failed"
echo > error_log
out=$( { echo 'p:myev vfs_read' >> kprobe_events; } 2>&1 ) && fail "duplicate accepted"
case $out in *"File exists"*) ;; *) fail "want EEXIST, got: $out" ;; esac
grep -q 'There is already the exact same probe event' error_log || fail "message: $(cat error_log)"
echo 'p:myev vfs_write' >> kprobe_events || fail "append failed"
[ "$(wc -l < kprobe_events)" -eq 2 ] || fail "want 2 probes: $(cat kprobe_events)"
[ "$(grep -c myev kprobe_profile)" -eq 2 ] || fail "profile: $(cat kprobe_profile)"
echo '-:myev' >> kprobe_events || fail "remove failed"
[ -z "$(cat kprobe_events)" ] || fail "left: $(cat kprobe_events)"
exit 0
