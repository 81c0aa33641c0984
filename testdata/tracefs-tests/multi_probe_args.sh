#!/bin/sh
# description: a probe appended to an event must have the same argument names and types
fail() { echo "FAIL: $*" >&2; exit 1; }
echo 'p:myev vfs_read a=%di:u64' >> kprobe_events || fail "add failed"
echo 'p:myev vfs_write a=%di:u64' >> kprobe_events || fail "append with the same args failed"
echo > error_log
if echo 'p:myev vfs_readv a=%di:u32' >> kprobe_events 2>/dev/null; then fail "different type accepted"; fi
grep -q 'Argument type or name is different' error_log || fail "message: $(cat error_log)"
if echo 'p:myev vfs_readv b=%di:u64' >> kprobe_events 2>/dev/null; then fail "different name accepted"; fi
[ "$(wc -l < kprobe_events)" -eq 2 ] || fail "probes: $(cat kprobe_events)"
exit 0
