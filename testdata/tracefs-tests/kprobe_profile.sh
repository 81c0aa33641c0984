#!/bin/sh
# description: kprobe_profile lists each kprobe with hit and miss counts
fail() { echo "FAIL: $*" >&2; exit 1; }
echo 'p:myev vfs_read' >> kprobe_events || fail "add kprobe"
echo 'r:myret vfs_write' >> kprobe_events || fail "add kretprobe"
grep -q '^  myev  *0  *0$' kprobe_profile || fail "myev: $(cat kprobe_profile)"
grep -q '^  myret  *0  *0$' kprobe_profile || fail "myret: $(cat kprobe_profile)"
[ "$(wc -l < kprobe_profile)" -eq 2 ] || fail "want 2 lines: $(cat kprobe_profile)"
echo '-:myev' >> kprobe_events || fail "remove"
grep -q myev kprobe_profile && fail "removed event still in profile"
exit 0
