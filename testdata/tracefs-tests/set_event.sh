#!/bin/sh
# description: set_event enables events by SYSTEM:EVENT, bare name, SYSTEM: and :EVENT, '!' disables, a truncating open disables all, unknown names and globs fail with EINVAL; it lists enabled events in available_events order
fail() { echo "FAIL: $*" >&2; exit 1; }
[ -d events/sched/sched_switch ] || fail "no events/sched/sched_switch"
[ -z "$(cat set_event)" ] || fail "initial: $(cat set_event)"
echo sched:sched_switch > set_event || fail "sched:sched_switch"
[ "$(cat set_event)" = sched:sched_switch ] || fail "readback: $(cat set_event)"
[ "$(cat events/sched/sched_switch/enable)" = 1 ] || fail "enable file"
[ "$(cat events/sched/enable)" = X ] || fail "group: $(cat events/sched/enable)"
[ "$(cat events/enable)" = X ] || fail "top: $(cat events/enable)"
echo sched_wakeup >> set_event || fail "bare event"
[ "$(grep -c . set_event)" = 2 ] || fail "two: $(cat set_event)"
echo '!sched:sched_switch' >> set_event || fail "!"
[ "$(cat set_event)" = sched:sched_wakeup ] || fail "after !: $(cat set_event)"
if echo no_such:event >> set_event 2>/dev/null; then fail "unknown accepted"; fi
if echo no_such_event >> set_event 2>/dev/null; then fail "unknown bare accepted"; fi
if echo 'sched:sched_sw*' >> set_event 2>/dev/null; then fail "glob accepted"; fi
if echo '*' >> set_event 2>/dev/null; then fail "bare * accepted"; fi
[ "$(cat set_event)" = sched:sched_wakeup ] || fail "after failures: $(cat set_event)"
echo 'irq:' >> set_event || fail "irq:"
[ "$(cat events/irq/enable)" = 1 ] || fail "irq group: $(cat events/irq/enable)"
echo '!irq' >> set_event || fail "!irq (system word)"
[ "$(cat events/irq/enable)" = 0 ] || fail "irq group after !irq: $(cat events/irq/enable)"
echo '*:sched_switch' >> set_event || fail "*:sched_switch"
[ "$(cat events/sched/sched_switch/enable)" = 1 ] || fail "*:sched_switch"
echo > set_event || fail "truncate"
[ -z "$(cat set_event)" ] || fail "after truncate: $(cat set_event)"
[ "$(cat events/enable)" = 0 ] || fail "events/enable after truncate: $(cat events/enable)"
echo 'sched:sched_switch irq:irq_handler_entry' >> set_event || fail "two words"
printf 'sched:sched_wakeup\n' >> set_event || fail "printf"
[ "$(grep -c . set_event)" = 3 ] || fail "three: $(cat set_event)"
echo 'p:myev vfs_read' >> kprobe_events || fail "add kprobe"
echo kprobes:myev >> set_event || fail "kprobe via set_event"
[ "$(cat events/kprobes/myev/enable)" = 1 ] || fail "kprobe enable file"
grep -qx kprobes:myev available_events || fail "available_events lacks kprobes:myev"
# set_event lists the enabled events in available_events's order.
want=$(cat available_events | awk -v s="$(cat set_event)" 'BEGIN { n = split(s, a, "\n"); for (i = 1; i <= n; i++) on[a[i]] = 1 } on[$0]')
[ "$(cat set_event)" = "$want" ] || fail "order: $(cat set_event) / $want"
echo > set_event || fail "truncate"
echo > kprobe_events || fail "clear kprobes"
exit 0
