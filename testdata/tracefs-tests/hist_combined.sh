#!/bin/sh
# description: combined inter-event hists: two synthetic events (waking latency, wakeup latency) generated from sched events, and a third generated from the second's hist by adding a variable of each ($waking_lat+$wakeup_lat, read across events); readbacks; with event hits (sleep wakes up), every synthetic hist counts; removal in dependency order
s=events/sched
y=events/synthetic
fail() { echo "FAIL: $*" >&2; cleanup 2>/dev/null; echo local > trace_clock; exit 1; }
cleanup() {
	for e in synthetic/waking_plus_wakeup_latency synthetic/wakeup_latency synthetic/waking_latency sched/sched_switch sched/sched_wakeup sched/sched_waking; do echo > events/$e/trigger; done
	echo > synthetic_events
}
echo 'waking_latency u64 lat; pid_t pid' >> synthetic_events || fail "define waking_latency"
echo 'hist:keys=pid:ts0=common_timestamp.usecs if comm=="sleep"' >> $s/sched_waking/trigger || fail "ts0"
a='hist:keys=pid:waking_lat=common_timestamp.usecs-$ts0:onmatch(sched.sched_waking).waking_latency($waking_lat,pid) if comm=="sleep"'
echo "$a" >> $s/sched_wakeup/trigger || fail "waking_lat"
echo 'hist:keys=pid,lat:sort=pid,lat' >> $y/waking_latency/trigger || fail "waking_latency hist"
echo 'wakeup_latency u64 lat; pid_t pid' >> synthetic_events || fail "define wakeup_latency"
echo 'hist:keys=pid:ts1=common_timestamp.usecs if comm=="sleep"' >> $s/sched_wakeup/trigger || fail "ts1"
b='hist:keys=next_pid:wakeup_lat=common_timestamp.usecs-$ts1:onmatch(sched.sched_wakeup).wakeup_latency($wakeup_lat,next_pid) if next_comm=="sleep"'
echo "$b" >> $s/sched_switch/trigger || fail "wakeup_lat"
echo 'waking_plus_wakeup_latency u64 lat; pid_t pid' >> synthetic_events || fail "define the sum"
c='hist:keys=pid,lat:sort=pid,lat:ww_lat=$waking_lat+$wakeup_lat:onmatch(synthetic.wakeup_latency).waking_plus_wakeup_latency($ww_lat,pid)'
echo "$c" >> $y/wakeup_latency/trigger || fail "the sum"
echo 'hist:keys=pid,lat:sort=pid,lat' >> $y/waking_plus_wakeup_latency/trigger || fail "the sum's hist"
[ "$(cat $y/wakeup_latency/trigger)" = 'hist:keys=pid,lat:vals=hitcount:ww_lat=$waking_lat+$wakeup_lat:sort=pid,lat:size=2048:onmatch(synthetic.wakeup_latency).waking_plus_wakeup_latency($ww_lat,pid) [active]' ] || fail "wakeup_latency: $(cat $y/wakeup_latency/trigger)"
[ "$(cat $s/sched_wakeup/trigger)" = 'hist:keys=pid:vals=hitcount:waking_lat=common_timestamp.usecs-$ts0:sort=hitcount:size=2048:clock=global:onmatch(sched.sched_waking).waking_latency($waking_lat,pid) if comm=="sleep" [active]
hist:keys=pid:vals=hitcount:ts1=common_timestamp.usecs:sort=hitcount:size=2048:clock=global if comm=="sleep" [active]' ] || fail "sched_wakeup: $(cat $s/sched_wakeup/trigger)"
[ "$(cat synthetic_events)" = "waking_latency	u64 lat; pid_t pid
wakeup_latency	u64 lat; pid_t pid
waking_plus_wakeup_latency	u64 lat; pid_t pid" ] || fail "synthetic_events: $(cat synthetic_events)"
# Hits need a running kernel: ktrace --kernel SNAPSHOT emulates the
# files and records no event, so those checks are skipped there.
echo > trace
echo 1 > events/syscalls/sys_enter_sync/enable
sync
grep -q 'sys_sync()' trace; seen=$?
echo 0 > events/syscalls/sys_enter_sync/enable
if [ $seen = 0 ]; then
	sleep 0.05; sleep 0.05
	for e in waking_latency wakeup_latency waking_plus_wakeup_latency; do
		grep -q '^{ pid: *[0-9]*, lat: *[0-9]* } hitcount: *1$' $y/$e/hist || fail "$e hist: $(cat $y/$e/hist)"
	done
fi
# A synthetic event with triggers or generated is busy; removal goes
# from the last consumer back.
echo '!waking_plus_wakeup_latency' >> synthetic_events 2>/dev/null && fail "removed a busy synthetic event"
echo '!hist:keys=pid,lat:sort=pid,lat' >> $y/waking_plus_wakeup_latency/trigger || fail "remove the sum's hist"
echo "!$c" >> $y/wakeup_latency/trigger || fail "remove the sum"
echo '!waking_plus_wakeup_latency' >> synthetic_events || fail "remove waking_plus_wakeup_latency"
echo "!$b" >> $s/sched_switch/trigger || fail "remove wakeup_lat"
echo '!hist:keys=pid:ts1=common_timestamp.usecs if comm=="sleep"' >> $s/sched_wakeup/trigger || fail "remove ts1"
echo "!$a" >> $s/sched_wakeup/trigger || fail "remove waking_lat"
echo '!hist:keys=pid:ts0=common_timestamp.usecs if comm=="sleep"' >> $s/sched_waking/trigger || fail "remove ts0"
echo '!hist:keys=pid,lat:sort=pid,lat' >> $y/waking_latency/trigger || fail "remove waking_latency's hist"
echo > synthetic_events || fail "truncate synthetic_events"
[ -z "$(cat synthetic_events)" ] || fail "left: $(cat synthetic_events)"
# A hist trigger with a timestamp set the trace clock to global (its
# clock=), and its removal left it so: back to local.
echo local > trace_clock
exit 0
