#!/bin/sh
# description: a line with an unknown command letter fails with EINVAL and logs nothing
fail() { echo "FAIL: $*" >&2; exit 1; }
echo > error_log
out=$( { echo 'x:myev vfs_read' >> kprobe_events; } 2>&1 ) && fail "accepted"
case $out in *"Invalid argument"*) ;; *) fail "want EINVAL, got: $out" ;; esac
[ -z "$(cat error_log)" ] || fail "logged: $(cat error_log)"
exit 0
