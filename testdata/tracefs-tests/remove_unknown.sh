#!/bin/sh
# description: removing an event that does not exist fails with ENOENT and logs nothing
fail() { echo "FAIL: $*" >&2; exit 1; }
echo > error_log
out=$( { echo '-:ktrace_nonexistent' >> kprobe_events; } 2>&1 ) && fail "accepted"
case $out in *"No such file or directory"*) ;; *) fail "want ENOENT, got: $out" ;; esac
[ -z "$(cat error_log)" ] || fail "logged: $(cat error_log)"
exit 0
