#!/bin/sh
# description: hist handlers onmax() and onchange() with the save() and snapshot() actions: readback after the trigger's other parts, errors with their error_log entries (onmatch takes neither save nor snapshot, the handler's variable, one save per trigger (EEXIST), a handler needs an action); with event hits (sleep wakes up), the hist file shows max: and changed: lines with the saved fields and the snapshot taken
# flags: instance
w=events/sched/sched_waking/trigger
sw=events/sched/sched_switch/trigger
fail() { echo "FAIL: $*" >&2; { echo > $sw; echo > $w; } 2>/dev/null; echo local > trace_clock; exit 1; }
pad() { n=$1 s=; while [ "$n" -gt 0 ]; do s="$s "; n=$((n - 1)); done; printf '%s' "$s"; }
# reads WRITTEN READBACK
reads() {
	echo "$1" >> $w || fail "refused: $1"
	[ "$(cat $w)" = "$2 [active]" ] || fail "$1 reads back: $(cat $w)"
	echo "!$1" >> $w || fail "remove $1"
}
reads 'hist:keys=comm:p=prio:onmax($p).save(comm,pid)' 'hist:keys=comm:vals=hitcount:p=prio:sort=hitcount:size=2048:onmax($p).save(comm,pid)'
reads 'hist:keys=comm:p=prio:onchange($p).save(comm,prio) if comm=="sleep"' 'hist:keys=comm:vals=hitcount:p=prio:sort=hitcount:size=2048:onchange($p).save(comm,prio) if comm=="sleep"'
reads 'hist:keys=comm:p=prio:onchange($p).snapshot()' 'hist:keys=comm:vals=hitcount:p=prio:sort=hitcount:size=2048:onchange($p).snapshot()'
reads 'hist:keys=comm:p=prio:onmax($p).save(comm,pid):onmax($p).snapshot()' 'hist:keys=comm:vals=hitcount:p=prio:sort=hitcount:size=2048:onmax($p).save(comm,pid):onmax($p).snapshot()'
# bad COMMAND ERRNO-WORDS CARET-COLUMN MESSAGE (the last entry of error_log)
bad() {
	echo > error_log
	out=$( { echo "$1" >> $w; } 2>&1 ) && fail "accepted: $1"
	case $out in *"$2"*) ;; *) fail "$1: want $2, got: $out" ;; esac
	log=$(cat error_log); log=$(echo "$log" | tail -3 | sed 's/^\[[ 0-9.]*\] //')
	[ "$log" = "hist:sched:sched_waking: error: $4
  Command: $1
$(pad $(($3 + 11)))^" ] || fail "error_log after $1: $log"
}
bad 'hist:keys=comm:onmatch(sched.sched_wakeup).snapshot()' 'Invalid argument' 43 "Handler doesn't support action"
bad 'hist:keys=comm:onmatch(sched.sched_wakeup).save(comm,prio)' 'Invalid argument' 43 "Handler doesn't support action"
bad 'hist:keys=comm:onmax(prio).save(comm)' 'Invalid argument' 21 'For onmax(x) or onchange(x), x must be a variable'
bad 'hist:keys=comm:p=prio:onmax($nosuch).save(comm)' 'Invalid argument' 29 "Couldn't find onmax or onchange variable"
bad 'hist:keys=comm:p=prio:onmax($p).save(comm):onchange($p).save(pid)' 'File exists' 0 "Can't have more than one save() action per hist"
bad 'hist:keys=comm:p=prio:onmax($p)' 'Invalid argument' 0 'No action found'
bad 'hist:keys=comm:p=prio:onmax($p).save()' 'Invalid argument' 0 'Invalid action param'
bad 'hist:keys=comm:onmatch(sched.nosuch).save(comm)' 'Invalid argument' 29 'Invalid subsystem or event name'
grep -q '^hist' $w && fail "left: $(cat $w)"
# Hits need a running kernel: ktrace --kernel SNAPSHOT emulates the
# files and records no event, so the checks end here there.
echo > trace
echo 1 > events/syscalls/sys_enter_sync/enable
sync
grep -q 'sys_sync()' trace; seen=$?
echo 0 > events/syscalls/sys_enter_sync/enable
[ $seen = 0 ] || exit 0
# onmax: the largest wakeup latency of each sleep, with fields saved
# from the sched_switch that ended it.
echo 'hist:keys=pid:ts0=common_timestamp.usecs if comm=="sleep"' >> $w || fail "ts0"
echo 'hist:keys=next_pid:lat=common_timestamp.usecs-$ts0:onmax($lat).save(next_comm,prev_pid,prev_prio) if next_comm=="sleep"' >> $sw || fail "onmax"
sleep 0.05; sleep 0.05
h=$(cat events/sched/sched_switch/hist)
echo "$h" | grep -q "^	max: *[0-9]*  next_comm: sleep  *prev_pid: *[0-9]*  prev_prio: *[0-9]* *$" || fail "no max: line: $h"
[ "$(echo "$h" | grep -c '^{ next_pid: ')" = "$(echo "$h" | grep -c '^	max: ')" ] || fail "a max: line per entry: $h"
echo '!hist:keys=next_pid:lat=common_timestamp.usecs-$ts0:onmax($lat).save(next_comm,prev_pid,prev_prio) if next_comm=="sleep"' >> $sw || fail "remove onmax"
echo '!hist:keys=pid:ts0=common_timestamp.usecs if comm=="sleep"' >> $w || fail "remove ts0"
# onchange: saved when the variable changes (the first hit included).
echo 'hist:keys=comm:p=pid:onchange($p).save(comm,prio) if comm=="sleep"' >> $w || fail "onchange"
sleep 0.05; sleep 0.05
h=$(cat events/sched/sched_waking/hist)
echo "$h" | grep -q "^	changed: *[0-9]*  comm: sleep  *prio: *[0-9]* *$" || fail "no changed: line: $h"
echo '!hist:keys=comm:p=pid:onchange($p).save(comm,prio) if comm=="sleep"' >> $w || fail "remove onchange"
# snapshot(): the hist file says where the snapshot went.
echo 0 > snapshot
echo 1 > events/sched/sched_waking/enable
echo 'hist:keys=comm:p=pid:onchange($p).snapshot() if comm=="sleep"' >> $w || fail "snapshot()"
sleep 0.05
echo 0 > events/sched/sched_waking/enable
h=$(cat events/sched/sched_waking/hist)
echo "$h" | grep -q '^Snapshot taken (see tracing/snapshot).  Details:$' || fail "no snapshot: $h"
echo "$h" | grep -q '^	triggering value { onchange($p) }: *[0-9]*	triggered by event with key: { comm: sleep  *}$' || fail "no details: $h"
grep -q 'sched_waking: ' snapshot || fail "snapshot buffer: $(cat snapshot)"
echo '!hist:keys=comm:p=pid:onchange($p).snapshot() if comm=="sleep"' >> $w || fail "remove snapshot()"
echo 0 > snapshot
# A hist trigger with a timestamp set the trace clock to global (its
# clock=), and its removal left it so: back to local.
echo local > trace_clock
exit 0
