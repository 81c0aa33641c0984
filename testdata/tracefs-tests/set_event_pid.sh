#!/bin/sh
# description: set_event_pid keeps pids in ascending order, appends on >>, clears on a truncating open, and refuses a non-number with EINVAL
# flags: instance
fail() { echo "FAIL: $*" >&2; exit 1; }
[ -z "$(cat set_event_pid)" ] || fail "initial: $(cat set_event_pid)"
echo 30 > set_event_pid || fail "30"
echo '7 12' >> set_event_pid || fail "7 12"
[ "$(cat set_event_pid | tr '\n' ' ')" = "7 12 30 " ] || fail "readback: $(cat set_event_pid)"
if echo abc >> set_event_pid 2>/dev/null; then fail "abc accepted"; fi
[ "$(grep -c . set_event_pid)" = 3 ] || fail "after abc: $(cat set_event_pid)"
echo 5 > set_event_pid || fail "5"
[ "$(cat set_event_pid)" = 5 ] || fail "after >: $(cat set_event_pid)"
echo > set_event_pid || fail "clear"
[ -z "$(cat set_event_pid)" ] || fail "after clear: $(cat set_event_pid)"
exit 0
