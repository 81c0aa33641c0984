#!/bin/sh
# description: everything after # is dropped and blank lines are accepted
fail() { echo "FAIL: $*" >&2; exit 1; }
echo 'p:myev vfs_read # a comment' >> kprobe_events || fail "add with comment"
[ "$(cat kprobe_events)" = "p:kprobes/myev vfs_read" ] || fail "readback: $(cat kprobe_events)"
echo '' >> kprobe_events || fail "blank line"
echo '# only a comment' >> kprobe_events || fail "comment line"
echo '   ' >> kprobe_events || fail "spaces"
[ "$(wc -l < kprobe_events)" -eq 1 ] || fail "lines: $(cat kprobe_events)"
exit 0
