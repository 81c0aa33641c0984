#!/bin/sh
# description: a field of the matching event passed to a synthetic event (sched.sched_waking.prio) becomes a field variable: the kernel adds a hidden trigger to that event (synthetic_prio=prio, keyed and filtered as the variable's trigger), shown in its trigger and hist files, gone with the trigger that needed it; with event hits, the synthetic hist holds the saved prio
w=events/sched/sched_waking/trigger
sw=events/sched/sched_switch/trigger
l=events/synthetic/wakeup_latency
fail() { echo "FAIL: $*" >&2; { echo > $l/trigger; echo > $sw; echo > $w; echo > synthetic_events; } 2>/dev/null; echo local > trace_clock; exit 1; }
echo 'wakeup_latency u64 lat; pid_t pid; int prio; char comm[16]' >> synthetic_events || fail "define"
echo 'hist:keys=comm:ts0=common_timestamp.usecs if comm=="sleep"' >> $w || fail "ts0"
m='hist:keys=next_comm:wakeup_lat=common_timestamp.usecs-$ts0:onmatch(sched.sched_waking).wakeup_latency($wakeup_lat,next_pid,sched.sched_waking.prio,next_comm) if next_comm=="sleep"'
echo "$m" >> $sw || fail "onmatch with a field variable"
echo 'hist:keys=pid,prio,comm:vals=lat:sort=pid,prio' >> $l/trigger || fail "synthetic hist"
exp='hist:keys=comm:vals=hitcount:ts0=common_timestamp.usecs:sort=hitcount:size=2048:clock=global if comm=="sleep" [active]
hist:keys=comm:vals=hitcount:synthetic_prio=prio:sort=hitcount:size=2048 if comm=="sleep" [active]'
[ "$(cat $w)" = "$exp" ] || fail "sched_waking: $(cat $w)"
grep -q '^# trigger info: hist:keys=comm:vals=hitcount:synthetic_prio=prio:' events/sched/sched_waking/hist || fail "hidden trigger's table: $(cat events/sched/sched_waking/hist)"
[ "$(cat $sw)" = 'hist:keys=next_comm:vals=hitcount:wakeup_lat=common_timestamp.usecs-$ts0:sort=hitcount:size=2048:clock=global:onmatch(sched.sched_waking).wakeup_latency($wakeup_lat,next_pid,sched.sched_waking.prio,next_comm) if next_comm=="sleep" [active]' ] || fail "sched_switch: $(cat $sw)"
# Hits need a running kernel: ktrace --kernel SNAPSHOT emulates the
# files and records no event, so those checks are skipped there.
echo > trace
echo 1 > events/syscalls/sys_enter_sync/enable
sync
grep -q 'sys_sync()' trace; seen=$?
echo 0 > events/syscalls/sys_enter_sync/enable
if [ $seen = 0 ]; then
	sleep 0.05; sleep 0.05
	h=$(cat $l/hist)
	echo "$h" | grep -q '^{ pid: *[0-9]*, prio: *120, comm: sleep  *} hitcount: *1  lat: *[0-9]*$' || fail "synthetic hist: $h"
fi
echo "!$m" >> $sw || fail "remove the onmatch trigger"
[ "$(cat $w)" = 'hist:keys=comm:vals=hitcount:ts0=common_timestamp.usecs:sort=hitcount:size=2048:clock=global if comm=="sleep" [active]' ] || fail "hidden trigger left: $(cat $w)"
grep -q synthetic_prio events/sched/sched_waking/hist && fail "hidden table left: $(cat events/sched/sched_waking/hist)"
echo '!hist:keys=pid,prio,comm:vals=lat:sort=pid,prio' >> $l/trigger || fail "remove synthetic hist"
echo '!hist:keys=comm:ts0=common_timestamp.usecs if comm=="sleep"' >> $w || fail "remove ts0"
echo '!wakeup_latency' >> synthetic_events || fail "remove the synthetic event"
# A hist trigger with a timestamp set the trace clock to global (its
# clock=), and its removal left it so: back to local.
echo local > trace_clock
exit 0
