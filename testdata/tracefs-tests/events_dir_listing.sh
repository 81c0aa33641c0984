#!/bin/sh
# description: events/GROUP/EVENT holds enable, filter, format, id and trigger
fail() { echo "FAIL: $*" >&2; exit 1; }
echo 'p:myev vfs_read' >> kprobe_events || fail "add failed"
for f in enable filter format id trigger; do
	[ -f events/kprobes/myev/$f ] || fail "no $f"
done
ls events/kprobes | grep -q '^myev$' || fail "ls events/kprobes: $(ls events/kprobes)"
[ "$(cat events/kprobes/myev/filter)" = none ] || fail "filter: $(cat events/kprobes/myev/filter)"
[ -f events/header_page ] || fail "no header_page"
exit 0
