#!/bin/sh
# description: behaviours found by running unseen filter/trigger sessions on both kernels and on ktrace: a .bucket[s] modifier without '=' logs its caret at what follows it (column 0 at the end of the command); a named histogram is not shared between fields that differ in C type only (a kprobe's u64 count, sys_enter_write's size_t count); a string field as a hist value is taken (the kernel sums the strings' addresses) and a trigger refused after it leaves the file as it was; with event hits, syscall events' records show preempt depth 1 (...1.) and an event probe on a syscall event depth 2 (...2.), on sched_process_exit depth 1; on kernels with fprobe events (6.12) a tracepoint probe's and an fprobe exit's records depth 1; sched_switch's records irqs-off and depth 2 (d..2.), a synthetic event's the flags of the record that generated it, 2 deeper on 6.1 and 3 deeper on 6.12; a stacktrace trigger's entry the flags of the record that triggered it (...1. on a syscall event)
t=events/sched/sched_process_fork/trigger
cleanup() {
	{ echo > $t; } 2>/dev/null
	{ echo > events/demo/nw/trigger; } 2>/dev/null
	{ echo > events/syscalls/sys_enter_write/trigger; } 2>/dev/null
	{ echo > events/syscalls/sys_exit_sync/trigger; } 2>/dev/null
	{ echo '!stacktrace' >> events/syscalls/sys_enter_sync/trigger; } 2>/dev/null
	{ echo 0 > events/sched/sched_switch/filter; } 2>/dev/null
	echo 0 > events/enable
	echo > dynamic_events
	echo > synthetic_events
}
fail() { echo "FAIL: $*" >&2; cleanup; exit 1; }
pad() { n=$1 s=; while [ "$n" -gt 0 ]; do s="$s "; n=$((n - 1)); done; printf '%s' "$s"; }
# logs COMMAND CARET-COLUMN MESSAGE: the write fails with EINVAL and
# logs MESSAGE with the caret under COMMAND's column.
logs() {
	echo > error_log
	out=$( { echo "$1" >> $t; } 2>&1 ) && fail "accepted: $1"
	case $out in *"Invalid argument"*) ;; *) fail "$1: want EINVAL, got: $out" ;; esac
	log=$(cat error_log | sed 's/^\[[ 0-9.]*\] //')
	exp="hist:sched:sched_process_fork: error: $3
  Command: $1
$(pad $(($2 + 11)))^"
	[ "$log" = "$exp" ] || fail "error_log after $1: $log"
}
logs 'hist:keys=child_pid.buckets' 0 'Invalid field modifier'
logs 'hist:keys=child_pid.bucket' 0 'Invalid field modifier'
logs 'hist:keys=child_pid.bucketsx' 27 'Invalid field modifier'
logs 'hist:keys=child_pid.buckets=0' 28 'Invalid field modifier'
# A named histogram's fields must have the same C type.
echo 'p:demo/nw ksys_write count=$arg3:u64' >> kprobe_events || fail "kprobe"
echo 'hist:name=h11shared:keys=count' >> events/demo/nw/trigger || fail "named hist on the kprobe"
echo > error_log
out=$( { echo 'hist:name=h11shared:keys=count' >> events/syscalls/sys_enter_write/trigger; } 2>&1 ) && fail "named hist shared between u64 and size_t"
case $out in *"Invalid argument"*) ;; *) fail "named mismatch: want EINVAL, got: $out" ;; esac
log=$(cat error_log | sed 's/^\[[ 0-9.]*\] //')
[ "$log" = "hist:syscalls:sys_enter_write: error: Named hist trigger doesn't match existing named trigger (includes variables)
  Command: hist:name=h11shared:keys=count
$(pad 16)^" ] || fail "named mismatch logged: $log"
[ "$(grep -c . events/syscalls/sys_enter_write/trigger)" = 2 ] || fail "sys_enter_write took a trigger: $(cat events/syscalls/sys_enter_write/trigger)"
echo '!hist:name=h11shared:keys=count' >> events/demo/nw/trigger || fail "named hist not removed"
echo '-:demo/nw' >> kprobe_events || fail "kprobe not removed"
# A string value (the kernel sums addresses; what it shows is not
# checked), then a trigger refused: the first stays, alone.
echo 'hist:keys=child_pid:vals=parent_comm' >> $t || fail "string value refused"
[ "$(cat $t)" = "hist:keys=child_pid:vals=hitcount,parent_comm:sort=hitcount:size=2048 [active]" ] || fail "string value reads back: $(cat $t)"
echo 'hist:keys=child_pid:vals=child_comm,nosuch' >> $t 2>/dev/null && fail "nosuch taken"
[ "$(grep -c . $t)" = 1 ] || fail "after a refused trigger: $(cat $t)"
echo '!hist:keys=child_pid:vals=parent_comm' >> $t || fail "string value trigger not removed"
# Hits need a running kernel: ktrace --kernel SNAPSHOT emulates the
# files and records no event, so the checks end here there.
echo > trace
echo 1 > events/syscalls/sys_enter_sync/enable
sync
grep -q 'sys_sync()' trace; seen=$?
echo 0 > events/syscalls/sys_enter_sync/enable
[ $seen = 0 ] || { cleanup; exit 0; }
echo 'e:demo/sy syscalls/sys_enter_sync' >> dynamic_events || fail "eprobe on sys_enter_sync"
echo 'e:demo/ex sched/sched_process_exit comm=$comm:string' >> dynamic_events || fail "eprobe on sched_process_exit"
echo 'comm == "sync"' > events/demo/ex/filter || fail "eprobe filter"
for e in syscalls/sys_enter_sync syscalls/sys_exit_sync demo/sy demo/ex; do echo 1 > events/$e/enable; done
echo > trace
sync
echo 0 > events/enable
# depth WHAT FLAGS: WHAT's record shows the latency flags FLAGS.
depth() { grep -q "^ *${3:-sync}-[0-9]* *\[[0-9]*\] $2 .*: $1" trace || fail "$1 not $2: $(grep -v '^#' trace)"; }
depth 'sys_sync()' '\.[.Nnp]\.1\.'
depth 'sys_sync -> ' '\.[.Nnp]\.1\.'
depth 'sy: (syscalls.sys_enter_sync)' '\.[.Nnp]\.2\.'
depth 'ex: (sched.sched_process_exit)' '\.[.Nnp]\.1\.'
echo 0 > events/demo/ex/filter
echo > dynamic_events
if grep -q 'f\[:\[<group>/\]\[<event>\]\] <func-name>' README; then
	echo 'f:demo/fx ksys_sync%return' >> dynamic_events || fail "fprobe exit"
	echo 't:demo/tx sched_process_exit' >> dynamic_events || fail "tracepoint probe"
	echo 'comm == "sync"' > events/demo/tx/filter || fail "tracepoint probe filter"
	echo 1 > events/demo/enable
	echo > trace
	sync
	echo 0 > events/demo/enable
	depth 'fx: (' '\.[.Nnp]\.1\.'
	depth 'tx: (' '\.[.Nnp]\.1\.'
	echo 0 > events/demo/tx/filter
	echo > dynamic_events
fi
echo 'next_comm == "sleep"' > events/sched/sched_switch/filter || fail "sched_switch filter"
echo 1 > events/sched/sched_switch/enable
echo > trace
sleep 0.01
echo 0 > events/sched/sched_switch/enable
grep -q '^ *.*-[0-9]* *\[[0-9]*\] d[.Nnp]\.2\. .*: sched_switch: .*next_comm=sleep' trace || fail "sched_switch not d..2.: $(grep -v '^#' trace)"
echo 0 > events/sched/sched_switch/filter
echo 'sy u64 v' >> synthetic_events || fail "synthetic event"
echo 'hist:keys=common_pid:onmatch(syscalls.sys_exit_sync).sy(ret)' >> events/syscalls/sys_exit_sync/trigger || fail "onmatch"
echo 1 > events/synthetic/sy/enable
echo > trace
sync
echo 0 > events/synthetic/sy/enable
if grep -q 'f\[:\[<group>/\]\[<event>\]\] <func-name>' README; then
	depth 'sy: ' '\.[.Nnp]\.4\.'
else
	depth 'sy: ' '\.[.Nnp]\.3\.'
fi
echo 'stacktrace' > events/syscalls/sys_enter_sync/trigger || fail "stacktrace trigger"
echo 1 > events/syscalls/sys_enter_sync/enable
echo > trace
sync
echo 0 > events/syscalls/sys_enter_sync/enable
depth '<stack trace>' '\.[.Nnp]\.1\.'
echo '!stacktrace' >> events/syscalls/sys_enter_sync/trigger
cleanup
