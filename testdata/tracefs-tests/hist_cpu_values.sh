#!/bin/sh
# description: the CPU as a hist value (vals=common_cpu, cpu and CPU, or a variable of it read as a value) is taken and reads back as common_cpu; with event hits, each entry sums the CPU numbers of its hits: keyed by the CPU, the sum is the CPU times the hitcount
w=events/demo/cw
cleanup() {
	{ echo > $w/trigger; } 2>/dev/null
	echo 0 > events/enable
	echo > kprobe_events
}
fail() { echo "FAIL: $*" >&2; cleanup; exit 1; }
echo 'p:demo/cw vfs_write count=$arg3:u64' >> kprobe_events || fail "kprobe refused"
for t in 'hist:keys=common_cpu:vals=common_cpu,cpu if comm == "dd"' \
	'hist:keys=count:vals=CPU:sort=count if comm == "dd" && count < 4' \
	'hist:keys=cpu:x=common_cpu:vals=$x if comm == "dd"'; do
	echo "$t" >> $w/trigger || fail "refused: $t"
done
exp='hist:keys=common_cpu:vals=hitcount,common_cpu,common_cpu:sort=hitcount:size=2048 if comm == "dd" [active]
hist:keys=count:vals=hitcount,common_cpu:sort=count:size=2048 if comm == "dd" && count < 4 [active]
hist:keys=common_cpu:vals=hitcount,common_cpu:x=common_cpu:sort=hitcount:size=2048 if comm == "dd" [active]'
[ "$(cat $w/trigger)" = "$exp" ] || fail "readback: $(cat $w/trigger)"
# Hits need a running kernel: ktrace --kernel SNAPSHOT emulates the
# files and records no event, so the checks end here there.
echo > trace
echo 1 > events/syscalls/sys_enter_sync/enable
sync
grep -q 'sys_sync()' trace; seen=$?
echo 0 > events/syscalls/sys_enter_sync/enable
[ $seen = 0 ] || { cleanup; exit 0; }
for n in 1 2 3; do
	dd if=/dev/zero of=/dev/null bs=$n count=1 2>/dev/null
done
h=$(cat $w/hist)
# Keyed by the CPU ("{ common_cpu: C } hitcount: N  common_cpu: S  cpu: S"
# and "{ cpu: C } hitcount: N  common_cpu: S"): every sum S is C*N.
n=0
for l in $(echo "$h" | grep -e '^{ common_cpu: ' -e '^{ cpu: ' | tr -d '{},:' | tr -s ' ' | sed 's/^ //; s/ /@/g'); do
	set -- $(echo "$l" | tr '@' ' ')
	c=$2 hits=$4 s1=$6 s2=${8:-$6}
	[ "$s1" = $((c * hits)) ] && [ "$s2" = "$s1" ] || fail "CPU $c, $hits hits, sums $s1 and $s2: $h"
	n=$((n + hits))
done
# Each dd makes two writes (its block and its statistics): 6 in all,
# counted once by the first trigger and once by the third.
[ $n = 12 ] || fail "$n hits keyed by CPU, want 12: $h"
[ "$(echo "$h" | grep -c '^{ count:          [123] } hitcount:          1  CPU: *[0-9]*$')" = 3 ] || fail "CPU values of the count keys: $h"
cleanup
exit 0
