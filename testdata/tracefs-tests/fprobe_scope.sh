#!/bin/sh
# description: fprobes live in dynamic_events only (kernels whose README lists f:); older kernels refuse f: lines
fail() { echo "FAIL: $*" >&2; exit 1; }
if ! grep -q 'f\[:\[<group>/\]\[<event>\]\] <func-name>' README; then
	if echo 'f:myf vfs_read' >> dynamic_events 2>/dev/null; then fail "f: accepted without fprobe support"; fi
	exit 0
fi
echo 'f:myf vfs_read' >> dynamic_events || fail "add fprobe"
echo 'p:myk vfs_write' >> kprobe_events || fail "add kprobe"
grep -q '^f:fprobes/myf vfs_read$' dynamic_events || fail "dynamic_events: $(cat dynamic_events)"
grep -q myf kprobe_events && fail "fprobe listed in kprobe_events"
echo > kprobe_events || fail "truncate kprobe_events"
grep -q '^f:fprobes/myf vfs_read$' dynamic_events || fail "fprobe removed by kprobe_events truncation"
grep -q myk dynamic_events && fail "kprobe survived truncation"
[ -d events/fprobes/myf ] || fail "no events/fprobes/myf"
echo '-:fprobes/myf' >> dynamic_events || fail "remove fprobe"
[ -z "$(cat dynamic_events)" ] || fail "left: $(cat dynamic_events)"
exit 0
