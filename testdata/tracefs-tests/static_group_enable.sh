#!/bin/sh
# description: a system's enable file enables every event of the system (set_event lists them all, the top enable reads X) and 0 disables them; a kprobe in that system follows the system's enable
fail() { echo "FAIL: $*" >&2; exit 1; }
n=$(ls events/irq | grep -v -x -e enable -e filter | wc -l)
[ $n -gt 1 ] || fail "irq events: $n"
echo 1 > events/irq/enable || fail "enable irq"
[ "$(cat events/irq/enable)" = 1 ] || fail "irq enable: $(cat events/irq/enable)"
[ "$(grep -c '^irq:' set_event)" = $n ] || fail "set_event: $(cat set_event)"
[ "$(cat events/enable)" = X ] || fail "top: $(cat events/enable)"
echo 'p:irq/myirq vfs_read' >> kprobe_events || fail "kprobe in irq"
[ "$(cat events/irq/enable)" = X ] || fail "irq enable with a disabled kprobe: $(cat events/irq/enable)"
echo 1 > events/irq/enable || fail "enable irq again"
[ "$(cat events/irq/myirq/enable)" = 1 ] || fail "kprobe not enabled by its system"
echo 0 > events/irq/enable || fail "disable irq"
[ -z "$(cat set_event)" ] || fail "set_event after: $(cat set_event)"
echo > kprobe_events || fail "clear"
exit 0
