#!/bin/sh
# description: a static event (sched/sched_switch) has enable, filter, format, hist, id and trigger; id is the format's ID; enabling it shows in set_event and the group's enable; available_events lists it; a kprobe cannot take its name
fail() { echo "FAIL: $*" >&2; exit 1; }
d=events/sched/sched_switch
for f in enable filter format hist id trigger; do
	[ -f $d/$f ] || fail "no $d/$f"
done
[ -f events/sched/enable ] && [ -f events/sched/filter ] || fail "group files"
head -1 $d/format | grep -qx 'name: sched_switch' || fail "format: $(head -2 $d/format)"
[ "$(cat $d/format | sed -n 's/^ID: //p')" = "$(cat $d/id)" ] || fail "id $(cat $d/id) vs format"
grep -q 'field:char prev_comm\[16\];' $d/format || fail "format fields"
grep -q '^print fmt: ' $d/format || fail "no print fmt"
[ "$(cat $d/enable)" = 0 ] || fail "enable: $(cat $d/enable)"
[ "$(cat $d/filter)" = none ] || fail "filter: $(cat $d/filter)"
grep -q '^# Available triggers:' $d/trigger || fail "trigger: $(cat $d/trigger)"
grep -qx sched:sched_switch available_events || fail "available_events"
[ "$(grep -c '^sched:' available_events)" = "$(ls events/sched | grep -v -x -e enable -e filter | wc -l)" ] || fail "sched events listed vs dirs"
echo 1 > $d/enable || fail "enable"
grep -qx sched:sched_switch set_event || fail "set_event: $(cat set_event)"
[ "$(cat events/sched/enable)" = X ] || fail "group: $(cat events/sched/enable)"
echo 0 > $d/enable || fail "disable"
[ "$(cat events/sched/enable)" = 0 ] || fail "group after: $(cat events/sched/enable)"
echo 'prev_pid == 1' > $d/filter || fail "filter on a field"
[ "$(cat $d/filter)" = 'prev_pid == 1' ] || fail "filter readback: $(cat $d/filter)"
echo 0 > $d/filter
if echo 'p:sched/sched_switch vfs_read' >> kprobe_events 2>/dev/null; then fail "kprobe took a static event's name"; fi
echo 'p:sched/myev vfs_read' >> kprobe_events || fail "kprobe in a static group"
[ -d events/sched/myev ] && [ -d $d ] || fail "group shared"
echo > kprobe_events
[ -d events/sched ] && [ ! -d events/sched/myev ] || fail "after clear"
exit 0
