#!/bin/sh
# description: an event named like its group's file (enable, filter): on eventfs (6.12, fprobes in README) the event's directory shadows the file (the name is a directory, listed twice); on 6.1's tracefs the directory is never made and the file stays. A group named like events/enable, read before, finds the file on both
fail() { echo "FAIL: $*" >&2; exit 1; }
cat events/enable >/dev/null || fail "events/enable unreadable"
echo 'p:grp/enable vfs_read' >> kprobe_events || fail "add grp/enable failed"
echo 'p:grp/filter vfs_read' >> kprobe_events || fail "add grp/filter failed"
echo 'p:enable/ev vfs_read' >> kprobe_events || fail "add enable/ev failed"
grep -q '^p:grp/enable vfs_read$' kprobe_events || fail "grp/enable not read back"
if grep -q 'f\[:\[<group>/\]\[<event>\]\] <func-name>' README; then
	test -d events/grp/enable || fail "events/grp/enable is not the event's directory"
	grep -q '^name: enable$' events/grp/enable/format || fail "no format for grp/enable"
	grep -q '^name: filter$' events/grp/filter/format || fail "no format for grp/filter"
	test "$(cat events/grp/enable/enable)" = 0 || fail "grp/enable's enable file"
	(echo 1 > events/grp/enable) 2>/dev/null && fail "the shadowed group enable file took a write"
	test "$(ls events/grp | grep -c '^enable$')" = 2 || fail "events/grp lists enable $(ls events/grp | grep -c '^enable$') times, want 2"
else
	test -f events/grp/enable || fail "events/grp/enable is not the group's file"
	test "$(cat events/grp/enable)" = 0 || fail "group enable file"
	test "$(ls events/grp | grep -c '^enable$')" = 1 || fail "events/grp lists enable more than once"
fi
test -f events/enable || fail "events/enable is not the events file"
cat events/enable/ev/enable 2>/dev/null && fail "enable/ev reachable under the events enable file"
echo > kprobe_events || fail "clear failed"
exit 0
