#!/bin/sh
# description: one write with several lines runs them in order and stops at the first failure
fail() { echo "FAIL: $*" >&2; exit 1; }
printf 'p:ev1 vfs_read\np:ev2 vfs_write\n' >> kprobe_events || fail "two lines"
[ "$(wc -l < kprobe_events)" -eq 2 ] || fail "want 2: $(cat kprobe_events)"
echo > kprobe_events
if printf 'p:ev3 vfs_read\np:ev4 vfs_read %%bad\np:ev5 vfs_write\n' >> kprobe_events 2>/dev/null; then fail "bad write accepted"; fi
[ "$(cat kprobe_events)" = "p:kprobes/ev3 vfs_read" ] || fail "readback: $(cat kprobe_events)"
printf 'p:ev6 vfs_write' >> kprobe_events || fail "line without newline"
grep -q '^p:kprobes/ev6 vfs_write$' kprobe_events || fail "ev6 missing: $(cat kprobe_events)"
exit 0
