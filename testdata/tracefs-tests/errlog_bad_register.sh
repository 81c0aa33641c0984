#!/bin/sh
# description: an unknown register fails the write with EINVAL and logs message, command and caret
fail() { echo "FAIL: $*" >&2; exit 1; }
echo > error_log
out=$( { echo 'p:myev vfs_read %zz' >> kprobe_events; } 2>&1 ) && fail "accepted"
case $out in *"Invalid argument"*) ;; *) fail "want EINVAL, got: $out" ;; esac
grep -q 'trace_kprobe: error: Invalid register name$' error_log || fail "message: $(cat error_log)"
grep -q '^  Command: p:myev vfs_read %zz$' error_log || fail "command: $(cat error_log)"
[ "$(tail -n 1 error_log)" = "                           ^" ] || fail "caret: $(tail -n 1 error_log)"
[ -z "$(cat kprobe_events)" ] || fail "event created"
exit 0
