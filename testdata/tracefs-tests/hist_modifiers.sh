#!/bin/sh
# description: hist trigger keys, values and modifiers: how each reads back (key=/val=/values= spelled out, hitcount first among the values, sorts, sizes rounded up to a power of two, clock=global with timestamps), which modifiers a field takes; with event hits, the hist file prints each modifier's form (execname, hex, syscall, log2, buckets, compound and string keys, ascending sort)
t=events/sched/sched_process_fork/trigger
h=events/sched/sched_process_fork/hist
fail() {
	echo "FAIL: $*" >&2
	{ echo > $t; echo > events/raw_syscalls/sys_exit/trigger; echo > events/kmem/kmalloc/trigger; } 2>/dev/null
	echo local > trace_clock
	exit 1
}
# reads WRITTEN READBACK: the trigger, alone on the event, reads back so.
reads() {
	echo "$1" >> $t || fail "refused: $1"
	[ "$(cat $t)" = "$2 [active]" ] || fail "$1 reads back: $(cat $t)"
	echo "!$1" >> $t || fail "remove $1"
}
reads 'hist:keys=common_pid.execname' 'hist:keys=common_pid.execname:vals=hitcount:sort=hitcount:size=2048'
reads 'hist:keys=parent_pid.hex:vals=child_pid' 'hist:keys=parent_pid.hex:vals=hitcount,child_pid:sort=hitcount:size=2048'
reads 'hist:key=child_pid:val=parent_pid' 'hist:keys=child_pid:vals=hitcount,parent_pid:sort=hitcount:size=2048'
reads 'hist:keys=child_pid:values=parent_pid' 'hist:keys=child_pid:vals=hitcount,parent_pid:sort=hitcount:size=2048'
reads 'hist:keys=parent_pid,child_pid:sort=child_pid.ascending' 'hist:keys=parent_pid,child_pid:vals=hitcount:sort=child_pid:size=2048'
reads 'hist:keys=parent_comm:sort=hitcount.descending' 'hist:keys=parent_comm:vals=hitcount:sort=hitcount.descending:size=2048'
reads 'hist:keys=common_pid:vals=child_pid,parent_pid:sort=parent_pid.descending,hitcount' 'hist:keys=common_pid:vals=hitcount,child_pid,parent_pid:sort=parent_pid.descending,hitcount:size=2048'
reads 'hist:keys=child_pid:size=100' 'hist:keys=child_pid:vals=hitcount:sort=hitcount:size=128'
reads 'hist:keys=child_pid.buckets=10:sort=child_pid.descending' 'hist:keys=child_pid.buckets=10:vals=hitcount:sort=child_pid.buckets=10.descending:size=2048'
reads 'hist:keys=child_pid.log2:sort=child_pid' 'hist:keys=child_pid.log2:vals=hitcount:sort=child_pid.log2:size=2048'
reads 'hist:keys=child_comm:vals=child_pid.hex' 'hist:keys=child_comm:vals=hitcount,child_pid.hex:sort=hitcount:size=2048'
reads 'hist:keys=common_pid.sym' 'hist:keys=common_pid.sym:vals=hitcount:sort=hitcount:size=2048'
reads 'hist:keys=child_pid.sym-offset' 'hist:keys=child_pid.sym-offset:vals=hitcount:sort=hitcount:size=2048'
reads 'hist:keys=common_cpu' 'hist:keys=common_cpu:vals=hitcount:sort=hitcount:size=2048'
reads 'hist:keys=common_timestamp' 'hist:keys=common_timestamp:vals=hitcount:sort=hitcount:size=2048:clock=global'
reads 'hist:keys=child_pid:vals=common_timestamp.usecs' 'hist:keys=child_pid:vals=hitcount,common_timestamp.usecs:sort=hitcount:size=2048:clock=global'
# The kernel's stack key: "common_stacktrace" on kernels whose README
# names it (6.12, which still takes "stacktrace"), "stacktrace" before.
if grep -q "special string 'common_stacktrace'" README; then
	reads 'hist:keys=common_stacktrace' 'hist:keys=common_stacktrace:vals=hitcount:sort=hitcount:size=2048'
	reads 'hist:keys=stacktrace' 'hist:keys=common_stacktrace:vals=hitcount:sort=hitcount:size=2048'
	reads 'hist:keys=common_pid:vals=child_pid:NOHC' 'hist:keys=common_pid:vals=child_pid:sort=hitcount:size=2048:nohitcount'
else
	reads 'hist:keys=stacktrace' 'hist:keys=stacktrace:vals=hitcount:sort=hitcount:size=2048'
	echo 'hist:keys=common_stacktrace' >> $t 2>/dev/null && fail "6.1 took common_stacktrace"
	echo 'hist:keys=common_pid:vals=child_pid:NOHC' >> $t 2>/dev/null && fail "6.1 took NOHC"
fi
for c in 'hist:keys=parent_comm.execname' 'hist:keys=child_pid.junk' 'hist:keys=child_pid:size=64' 'hist:keys=child_pid:sort=child_pid.descending:size=64' 'hist:keys=child_pid.hex.sym'; do
	out=$( { echo "$c" >> $t; } 2>&1 ) && fail "accepted: $c"
	case $out in *"Invalid argument"*) ;; *) fail "$c: want EINVAL, got: $out" ;; esac
done
# Hits need a running kernel: ktrace --kernel SNAPSHOT emulates the
# files and records no event, so the checks end here there.
echo > trace
echo 1 > events/syscalls/sys_enter_sync/enable
sync
grep -q 'sys_sync()' trace; seen=$?
echo 0 > events/syscalls/sys_enter_sync/enable
[ $seen = 0 ] || exit 0
work() { for i in 1 2 3 4 5; do dd if=/dev/zero of=/dev/null count=1 2>/dev/null; done; }
# shows HIST-FILE PATTERN WHAT: a line of the hist file matches.
shows() { grep -q "$2" $1 || fail "$3: $(cat $1)"; }
for c in 'hist:keys=common_pid.execname' 'hist:keys=parent_pid.hex:vals=child_pid' 'hist:keys=parent_pid,child_pid:sort=child_pid.ascending' 'hist:keys=parent_comm' 'hist:keys=child_pid.buckets=1000' 'hist:keys=child_pid.log2'; do
	echo "$c" >> $t || fail "refused: $c"
done
echo 'hist:keys=id.syscall' >> events/raw_syscalls/sys_exit/trigger || fail "id.syscall"
echo 'hist:keys=bytes_req.log2:vals=bytes_alloc' >> events/kmem/kmalloc/trigger || fail "bytes_req.log2"
work
shows $h '^{ common_pid: [^ ]* *\[ *[0-9][0-9]*\] } hitcount: *[0-9][0-9]*$' "execname key"
shows $h '^{ parent_pid: [0-9a-f][0-9a-f]* } hitcount: *[0-9]*  child_pid: *[0-9]*$' "hex key"
shows $h '^{ parent_pid: *[0-9]*, child_pid: *[0-9]* } hitcount: *[0-9]*$' "compound key"
shows $h '^{ parent_comm: [^ ]' "string key"
shows $h '^{ child_pid: ~ [0-9]*-[0-9]* } hitcount:' "buckets key"
shows $h '^{ child_pid: ~ 2^[0-9]* *} hitcount:' "log2 key"
shows events/raw_syscalls/sys_exit/hist '^{ id: sys_[a-z0-9_]* *\[ *[0-9]*\] } hitcount:' "syscall key"
shows events/kmem/kmalloc/hist '^{ bytes_req: ~ 2^[0-9]* *} hitcount: *[0-9]*  bytes_alloc: *[0-9]*$' "log2 key with a value"
grep -q '^    Hits: [1-9]' $h || fail "no hits counted: $(cat $h)"
# The ascending sort orders the compound key's child_pid column.
prev=0
for p in $(grep '^{ parent_pid: *[0-9]*, child_pid:' $h | sed 's/.*child_pid: *\([0-9]*\) .*/\1/'); do
	[ "$p" -ge "$prev" ] || fail "child_pid not ascending: $(cat $h)"
	prev=$p
done
{ echo > $t; echo > events/raw_syscalls/sys_exit/trigger; echo > events/kmem/kmalloc/trigger; } 2>/dev/null
# A hist trigger with a timestamp set the trace clock to global (its
# clock=), and its removal left it so: back to local.
echo local > trace_clock
exit 0
