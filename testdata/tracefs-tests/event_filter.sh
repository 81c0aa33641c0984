#!/bin/sh
# description: an event filter on a probe argument reads back; 0 clears it; an unknown field is refused
fail() { echo "FAIL: $*" >&2; exit 1; }
echo 'p:myev vfs_read a=%di:u64' >> kprobe_events || fail "add failed"
f=events/kprobes/myev/filter
[ "$(cat $f)" = none ] || fail "initial: $(cat $f)"
echo 'a == 1' > $f || fail "set filter"
[ "$(cat $f)" = 'a == 1' ] || fail "readback: $(cat $f)"
echo 0 > $f || fail "clear filter"
[ "$(cat $f)" = none ] || fail "after clear: $(cat $f)"
if echo 'nosuch == 1' > $f 2>/dev/null; then fail "unknown field accepted"; fi
exit 0
