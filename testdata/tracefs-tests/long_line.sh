#!/bin/sh
# description: a line of 4094 bytes or more fails the write with EINVAL and logs nothing
fail() { echo "FAIL: $*" >&2; exit 1; }
s=x
for i in 1 2 3 4 5 6 7 8 9 10 11 12; do s=$s$s; done
echo > error_log
out=$( { echo "p:myev vfs_read $s" >> kprobe_events; } 2>&1 ) && fail "accepted"
case $out in *"Invalid argument"*) ;; *) fail "want EINVAL, got: $out" ;; esac
[ -z "$(cat error_log)" ] || fail "logged: $(cat error_log)"
[ -z "$(cat kprobe_events)" ] || fail "event created"
exit 0
