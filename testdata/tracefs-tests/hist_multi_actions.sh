#!/bin/sh
# description: several hist triggers with the same key on one event, some with onmatch() actions reading a variable of another trigger of the same event by its fully qualified name (sched.sched_switch.$wakeup_lat); an ambiguous plain name refused with its error_log entry; readback in order; the variable's owner busy while read; removal
w=events/sched/sched_wakeup/trigger
sw=events/sched/sched_switch/trigger
fail() { echo "FAIL: $*" >&2; { echo > $sw; echo > $w; echo > events/sched/sched_waking/trigger; echo > synthetic_events; } 2>/dev/null; echo local > trace_clock; exit 1; }
pad() { n=$1 s=; while [ "$n" -gt 0 ]; do s="$s "; n=$((n - 1)); done; printf '%s' "$s"; }
echo 'wakeup_latency u64 lat; pid_t pid' >> synthetic_events || fail "define"
echo 'hist:keys=pid:ts0=common_timestamp.usecs if comm=="sleep"' >> $w || fail "ts0"
l1='hist:keys=next_pid:wakeup_lat=common_timestamp.usecs-$ts0 if next_comm=="sleep"'
l2='hist:keys=next_pid:onmatch(sched.sched_wakeup).wakeup_latency(sched.sched_switch.$wakeup_lat,next_pid) if next_comm=="sleep"'
l3='hist:keys=next_pid:onmatch(sched.sched_wakeup).wakeup_latency(sched.sched_switch.$wakeup_lat,prev_pid) if next_comm=="sleep"'
l4='hist:keys=next_pid if next_comm=="sleep"'
for l in "$l1" "$l2" "$l3" "$l4"; do echo "$l" >> $sw || fail "refused: $l"; done
exp='hist:keys=next_pid:vals=hitcount:wakeup_lat=common_timestamp.usecs-$ts0:sort=hitcount:size=2048:clock=global if next_comm=="sleep" [active]
hist:keys=next_pid:vals=hitcount:sort=hitcount:size=2048:onmatch(sched.sched_wakeup).wakeup_latency(sched.sched_switch.$wakeup_lat,next_pid) if next_comm=="sleep" [active]
hist:keys=next_pid:vals=hitcount:sort=hitcount:size=2048:onmatch(sched.sched_wakeup).wakeup_latency(sched.sched_switch.$wakeup_lat,prev_pid) if next_comm=="sleep" [active]
hist:keys=next_pid:vals=hitcount:sort=hitcount:size=2048 if next_comm=="sleep" [active]'
[ "$(cat $sw)" = "$exp" ] || fail "readback: $(cat $sw)"
# The variable's owner is busy while the actions read it.
echo "!$l1" >> $sw 2>/dev/null && fail "removed the variable's owner while it is read"
for l in "$l4" "$l3" "$l2" "$l1"; do echo "!$l" >> $sw || fail "remove: $l"; done
grep -q '^hist' $sw && fail "left: $(cat $sw)"
# A second ts0, on sched_waking: the plain name is now ambiguous.
echo 'hist:keys=pid:ts0=common_timestamp.usecs' >> events/sched/sched_waking/trigger || fail "second ts0"
echo > error_log
c='hist:keys=next_pid:lat=common_timestamp.usecs-$ts0'
echo "$c" >> $sw 2>/dev/null && fail "accepted an ambiguous \$ts0"
log=$(cat error_log); log=$(echo "$log" | head -3 | sed 's/^\[[ 0-9.]*\] //')
[ "$log" = "hist:sched:sched_switch: error: Variable name not unique, need to use fully qualified name (subsys.event.var) for variable
  Command: $c
$(pad 58)^" ] || fail "error_log after the ambiguous reference: $(cat error_log)"
c='hist:keys=next_pid:lat=common_timestamp.usecs-sched.sched_wakeup.$ts0'
echo "$c" >> $sw || fail "refused the fully qualified name"
echo "!$c" >> $sw || fail "remove the fully qualified reference"
echo '!hist:keys=pid:ts0=common_timestamp.usecs' >> events/sched/sched_waking/trigger || fail "remove the second ts0"
echo '!hist:keys=pid:ts0=common_timestamp.usecs if comm=="sleep"' >> $w || fail "remove ts0"
echo '!wakeup_latency' >> synthetic_events || fail "remove the synthetic event"
# A hist trigger with a timestamp set the trace clock to global (its
# clock=), and its removal left it so: back to local.
echo local > trace_clock
exit 0
