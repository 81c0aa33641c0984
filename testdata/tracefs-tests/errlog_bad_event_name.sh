#!/bin/sh
# description: an event name that is not a C identifier is logged with the caret on the name
fail() { echo "FAIL: $*" >&2; exit 1; }
echo > error_log
if echo 'p:1bad vfs_read' >> kprobe_events 2>/dev/null; then fail "accepted"; fi
grep -q 'trace_kprobe: error: Event name must follow the same rules as C identifiers$' error_log || fail "message: $(cat error_log)"
[ "$(tail -n 1 error_log)" = "             ^" ] || fail "caret: $(tail -n 1 error_log)"
exit 0
