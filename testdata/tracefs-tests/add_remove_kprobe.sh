#!/bin/sh
# description: add a kprobe event, see it in kprobe_events and events/, remove it with -:
fail() { echo "FAIL: $*" >&2; exit 1; }
echo 'p:myevent vfs_read' >> kprobe_events || fail "add failed"
[ "$(cat kprobe_events)" = "p:kprobes/myevent vfs_read" ] || fail "readback: $(cat kprobe_events)"
[ -d events/kprobes/myevent ] || fail "no events/kprobes/myevent"
echo '-:myevent' >> kprobe_events || fail "remove failed"
[ -z "$(cat kprobe_events)" ] || fail "not removed: $(cat kprobe_events)"
[ ! -d events/kprobes/myevent ] || fail "events dir survived removal"
exit 0
