#!/bin/sh
# description: inter-event hists: a variable saved on one event (sched_waking) and read on another (sched_switch), onmatch() generating a synthetic event in both spellings (EVENT(...) and trace(EVENT,...)), readback with clock=global, the synthetic event's own hist, a synthetic event in use is busy (EBUSY), removal in order; with event hits (sleep wakes up), the synthetic hist counts the sleeps
w=events/sched/sched_waking/trigger
sw=events/sched/sched_switch/trigger
l=events/synthetic/wakeup_latency
fail() { echo "FAIL: $*" >&2; { echo > $l/trigger; echo > $sw; echo > $w; echo > synthetic_events; } 2>/dev/null; echo local > trace_clock; exit 1; }
echo 'wakeup_latency u64 lat; pid_t pid; char comm[16]' >> synthetic_events || fail "define wakeup_latency"
[ -d $l ] || fail "no $l"
echo 'hist:keys=pid:ts0=common_timestamp.usecs if comm=="sleep"' >> $w || fail "ts0"
m='hist:keys=next_pid:wakeup_lat=common_timestamp.usecs-$ts0:onmatch(sched.sched_waking).wakeup_latency($wakeup_lat,next_pid,next_comm) if next_comm=="sleep"'
echo "$m" >> $sw || fail "onmatch"
echo 'hist:keys=comm,pid,lat:wakeup_lat=lat:sort=lat' >> $l/trigger || fail "synthetic hist"
[ "$(cat $w)" = 'hist:keys=pid:vals=hitcount:ts0=common_timestamp.usecs:sort=hitcount:size=2048:clock=global if comm=="sleep" [active]' ] || fail "sched_waking: $(cat $w)"
[ "$(cat $sw)" = 'hist:keys=next_pid:vals=hitcount:wakeup_lat=common_timestamp.usecs-$ts0:sort=hitcount:size=2048:clock=global:onmatch(sched.sched_waking).wakeup_latency($wakeup_lat,next_pid,next_comm) if next_comm=="sleep" [active]' ] || fail "sched_switch: $(cat $sw)"
[ "$(cat $l/trigger)" = 'hist:keys=comm,pid,lat:vals=hitcount:wakeup_lat=lat:sort=lat:size=2048 [active]' ] || fail "synthetic: $(cat $l/trigger)"
# The synthetic event is busy while a trigger generates it or has a
# trigger of its own; a variable read elsewhere keeps its trigger.
out=$( { echo '!wakeup_latency' >> synthetic_events; } 2>&1 ) && fail "removed a synthetic event in use"
case $out in *"Device or resource busy"*) ;; *) fail "!wakeup_latency: want EBUSY, got: $out" ;; esac
out=$( { echo '!hist:keys=pid:ts0=common_timestamp.usecs if comm=="sleep"' >> $w; } 2>&1 ) && fail "removed a trigger whose variable is read"
case $out in *"Device or resource busy"*) ;; *) fail "ts0's trigger: want EBUSY, got: $out" ;; esac
# Hits need a running kernel: ktrace --kernel SNAPSHOT emulates the
# files and records no event, so those checks are skipped there.
echo > trace
echo 1 > events/syscalls/sys_enter_sync/enable
sync
grep -q 'sys_sync()' trace; seen=$?
echo 0 > events/syscalls/sys_enter_sync/enable
if [ $seen = 0 ]; then
	sleep 0.05; sleep 0.05; sleep 0.05
	h=$(cat $l/hist)
	[ "$(echo "$h" | grep -c '^{ comm: sleep  *, pid: *[0-9]*, lat: *[0-9]* } hitcount: *1$')" -ge 3 ] || fail "synthetic hist: $h"
	echo "$h" | grep -q '^    Hits: [3-9]' || fail "synthetic hits: $h"
fi
echo '!hist:keys=comm,pid,lat:wakeup_lat=lat:sort=lat' >> $l/trigger || fail "remove the synthetic hist"
echo "!$m" >> $sw || fail "remove onmatch"
# The trace() spelling of the same action.
t='hist:keys=next_pid:wakeup_lat=common_timestamp.usecs-$ts0:onmatch(sched.sched_waking).trace(wakeup_latency,$wakeup_lat,next_pid,next_comm) if next_comm=="sleep"'
echo "$t" >> $sw || fail "trace()"
[ "$(cat $sw)" = 'hist:keys=next_pid:vals=hitcount:wakeup_lat=common_timestamp.usecs-$ts0:sort=hitcount:size=2048:clock=global:onmatch(sched.sched_waking).trace(wakeup_latency,$wakeup_lat,next_pid,next_comm) if next_comm=="sleep" [active]' ] || fail "trace() reads back: $(cat $sw)"
echo "!$t" >> $sw || fail "remove trace()"
echo '!hist:keys=pid:ts0=common_timestamp.usecs if comm=="sleep"' >> $w || fail "remove ts0"
echo '!wakeup_latency' >> synthetic_events || fail "remove wakeup_latency"
[ -d $l ] && fail "$l left"
# A hist trigger with a timestamp set the trace clock to global (its
# clock=), and its removal left it so: back to local.
echo local > trace_clock
exit 0
