#!/bin/sh
# description: a kprobe enabled only in a tracing instance counts its hits in the top level's kprobe_profile (the kernel keeps one count per probe, whichever instance enabled it), and keeps them after the instance is removed; its hits go to the instance's trace, not the top level's
fail() { echo "FAIL: $*" >&2; { echo 0 > instances/kpi/events/kprobes/kpi/enable; rmdir instances/kpi; echo '-:kpi' >> kprobe_events; } 2>/dev/null; exit 1; }
hits() { cat kprobe_profile | sed -n 's/^  kpi  *\([0-9]*\)  *[0-9]*$/\1/p'; }
echo 'p:kpi vfs_read' >> kprobe_events || fail "add kprobe"
[ "$(hits)" = 0 ] || fail "fresh: $(cat kprobe_profile)"
mkdir instances/kpi || fail "mkdir"
echo > trace
echo 1 > instances/kpi/events/kprobes/kpi/enable || fail "enable in the instance"
dd if=/proc/version of=/dev/null 2>/dev/null
dd if=/proc/version of=/dev/null 2>/dev/null
echo 0 > instances/kpi/events/kprobes/kpi/enable || fail "disable in the instance"
grep -q 'kpi:' trace && fail "the instance's hits in the top level's trace"
if grep -q 'kpi:' instances/kpi/trace; then
	# A running kernel: hits were counted.
	n=$(hits)
	[ "$n" -gt 0 ] || fail "instance hits not in kprobe_profile: $(cat kprobe_profile)"
	rmdir instances/kpi || fail "rmdir"
	[ "$(hits)" = "$n" ] || fail "after rmdir: $(cat kprobe_profile), had $n"
else
	[ "$(hits)" = 0 ] || fail "no hits traced but counted: $(cat kprobe_profile)"
	rmdir instances/kpi || fail "rmdir"
fi
echo '-:kpi' >> kprobe_events || fail "remove"
exit 0
