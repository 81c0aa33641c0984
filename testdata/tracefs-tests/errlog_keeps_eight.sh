#!/bin/sh
# description: error_log keeps the last 8 entries; a truncating open clears it
fail() { echo "FAIL: $*" >&2; exit 1; }
echo > error_log
for i in 1 2 3 4 5 6 7 8 9 10; do
	echo "p:ev$i vfs_read %bad$i" >> kprobe_events 2>/dev/null && fail "accepted $i"
done
[ "$(grep -c 'Command:' error_log)" -eq 8 ] || fail "want 8 entries: $(cat error_log)"
grep -q 'Command: p:ev3 ' error_log || fail "entry 3 missing"
grep -q 'Command: p:ev2 ' error_log && fail "entry 2 kept"
echo > error_log
[ -z "$(cat error_log)" ] || fail "not cleared: $(cat error_log)"
exit 0
