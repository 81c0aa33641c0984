#!/bin/sh
# description: an unknown fetch type is logged with the caret on the type
fail() { echo "FAIL: $*" >&2; exit 1; }
echo > error_log
if echo 'p:myev vfs_read x=%di:u128' >> kprobe_events 2>/dev/null; then fail "accepted"; fi
grep -q 'trace_kprobe: error: Unknown type is specified$' error_log || fail "message: $(cat error_log)"
[ "$(tail -n 1 error_log)" = "                                 ^" ] || fail "caret: $(tail -n 1 error_log)"
exit 0
