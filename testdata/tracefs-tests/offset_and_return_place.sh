#!/bin/sh
# description: SYM+0 and SYM%return places read back in the kernel's form
fail() { echo "FAIL: $*" >&2; exit 1; }
echo 'p:ev1 vfs_read+0' >> kprobe_events || fail "add +0"
echo 'p:ev2 vfs_read%return' >> kprobe_events || fail "add %return"
grep -q '^p:kprobes/ev1 vfs_read$' kprobe_events || fail "ev1: $(cat kprobe_events)"
grep -q '^r[0-9][0-9]*:kprobes/ev2 vfs_read$' kprobe_events || fail "ev2: $(cat kprobe_events)"
echo > error_log
if echo 'p:ev3 vfs_read+64%return' >> kprobe_events 2>/dev/null; then fail "offset %return accepted"; fi
grep -q 'error:' error_log || fail "not logged"
exit 0
