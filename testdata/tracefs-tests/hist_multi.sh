#!/bin/sh
# description: several hist triggers on one event (each its own table in the hist file, in order, removed one by one) and named hists: name= reads back, events sharing a name share one table, a trigger whose keys or values differ from the named one is refused with its error_log entry; with event hits, every table counts and the named tables agree
# flags: instance
f=events/sched/sched_process_fork
x=events/sched/sched_process_exit
fail() { echo "FAIL: $*" >&2; { echo > $f/trigger; echo > $x/trigger; echo > events/sched/sched_process_exec/trigger; } 2>/dev/null; exit 1; }
pad() { n=$1 s=; while [ "$n" -gt 0 ]; do s="$s "; n=$((n - 1)); done; printf '%s' "$s"; }
echo 'hist:keys=parent_pid:vals=child_pid' >> $f/trigger || fail "first"
echo 'hist:keys=parent_comm:vals=child_pid' >> $f/trigger || fail "second"
echo 'hist:keys=common_pid' >> $f/trigger || fail "third"
exp="hist:keys=parent_pid:vals=hitcount,child_pid:sort=hitcount:size=2048 [active]
hist:keys=parent_comm:vals=hitcount,child_pid:sort=hitcount:size=2048 [active]
hist:keys=common_pid:vals=hitcount:sort=hitcount:size=2048 [active]"
[ "$(cat $f/trigger)" = "$exp" ] || fail "three: $(cat $f/trigger)"
[ "$(grep -c '^# event histogram$' $f/hist)" = 3 ] || fail "tables: $(cat $f/hist)"
[ "$(grep '^# trigger info: ' $f/hist | sed 's/^# trigger info: //')" = "$exp" ] || fail "table order: $(cat $f/hist)"
echo '!hist:keys=parent_comm:vals=child_pid' >> $f/trigger || fail "remove the second"
[ "$(cat $f/trigger)" = "hist:keys=parent_pid:vals=hitcount,child_pid:sort=hitcount:size=2048 [active]
hist:keys=common_pid:vals=hitcount:sort=hitcount:size=2048 [active]" ] || fail "after removing the second: $(cat $f/trigger)"
echo > $f/trigger 2>/dev/null
# Named hists.
echo 'hist:name=tst:keys=common_pid' >> $f/trigger || fail "named on fork"
echo 'hist:name=tst:keys=common_pid' >> $x/trigger || fail "same name on exit"
exp="hist:name=tst:keys=common_pid:vals=hitcount:sort=hitcount:size=2048 [active]"
[ "$(cat $f/trigger)" = "$exp" ] || fail "fork: $(cat $f/trigger)"
[ "$(cat $x/trigger)" = "$exp" ] || fail "exit: $(cat $x/trigger)"
grep -q '^# trigger info: hist:name=tst:keys=common_pid:vals=hitcount:sort=hitcount:size=2048 \[active\]$' $x/hist || fail "exit's hist: $(cat $x/hist)"
e=events/sched/sched_process_exec/trigger
for c in 'hist:name=tst:keys=common_cpu' 'hist:name=tst:keys=common_pid:vals=hitcount:sort=common_pid'; do
	echo > error_log
	echo "$c" >> $e 2>/dev/null && fail "accepted a mismatched named trigger: $c"
	log=$(cat error_log); log=$(echo "$log" | sed 's/^\[[ 0-9.]*\] //')
	[ "$log" = "hist:sched:sched_process_exec: error: Named hist trigger doesn't match existing named trigger (includes variables)
  Command: $c
$(pad 16)^" ] || fail "error_log after $c: $log"
done
# Hits need a running kernel: ktrace --kernel SNAPSHOT emulates the
# files and records no event, so the checks end here there.
echo > trace
echo 1 > events/syscalls/sys_enter_sync/enable
sync
grep -q 'sys_sync()' trace; seen=$?
echo 0 > events/syscalls/sys_enter_sync/enable
[ $seen = 0 ] || exit 0
echo 'hist:keys=parent_pid:vals=child_pid' >> $f/trigger || fail "an unnamed one beside"
for i in 1 2 3 4 5; do dd if=/dev/zero of=/dev/null count=1 2>/dev/null; done
# One read of both files, so that no fork comes between them.
both=$(cat $f/hist $x/hist)
named=$(echo "$both" | sed -n '/name=tst/,/Dropped/p')
n=$(echo "$named" | wc -l)
# The named table is the same from both events (their hits together).
[ "$(echo "$named" | head -n $((n / 2)))" = "$(echo "$named" | tail -n $((n / 2)))" ] || fail "named tables differ: $both"
echo "$named" | grep -q '^    Hits: [1-9]' || fail "named table counted nothing: $both"
[ "$(echo "$both" | grep -c '^    Hits: [1-9]')" = 3 ] || fail "tables: $both"
{ echo > $f/trigger; echo > $x/trigger; } 2>/dev/null
exit 0
