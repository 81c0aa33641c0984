#!/bin/sh
# description: hist keys that are expressions (c8*2, c8-1000 with count/100, common_cpu+1, count/10 on a system call's event): they read back as written; with event hits, each hit is keyed by the expression's value, a key of a signed first operand prints sign-extended and sorts by all 64 bits as a signed number (c8*2 of s8 -56 is -112, first; 200 and 202 last, not by their low byte), an expression value column is summed but not printed
w=events/demo/xw
s=events/syscalls/sys_enter_write
cleanup() {
	{ echo > $w/trigger; } 2>/dev/null
	{ echo > $s/trigger; } 2>/dev/null
	echo 0 > events/enable
	echo > kprobe_events
}
fail() { echo "FAIL: $*" >&2; cleanup; exit 1; }
echo 'p:demo/xw vfs_write count=$arg3:u64 c8=$arg3:s8' >> kprobe_events || fail "kprobe refused"
for t in 'hist:keys=c8*2:vals=hitcount:sort=c8*2 if comm == "dd"' \
	'hist:keys=c8-1000,count/100:vals=hitcount:sort=c8-1000.descending if comm == "dd"' \
	'hist:keys=common_cpu+1:vals=hitcount if comm == "dd"' \
	'hist:keys=count:vals=count+c8:sort=count if comm == "dd" && count < 8'; do
	echo "$t" >> $w/trigger || fail "refused: $t"
done
echo 'hist:keys=fd,count/10:vals=hitcount:sort=fd,count/10 if comm == "dd" && fd == 1' >> $s/trigger || fail "refused on sys_enter_write"
exp='hist:keys=c8*2:vals=hitcount:sort=c8*2:size=2048 if comm == "dd" [active]
hist:keys=c8-1000,count/100:vals=hitcount:sort=c8-1000.descending:size=2048 if comm == "dd" [active]
hist:keys=common_cpu+1:vals=hitcount:sort=hitcount:size=2048 if comm == "dd" [active]
hist:keys=count:vals=hitcount,count+c8:sort=count:size=2048 if comm == "dd" && count < 8 [active]'
[ "$(cat $w/trigger)" = "$exp" ] || fail "readback: $(cat $w/trigger)"
# Hits need a running kernel: ktrace --kernel SNAPSHOT emulates the
# files and records no event, so the checks end here there.
echo > trace
echo 1 > events/syscalls/sys_enter_sync/enable
sync
grep -q 'sys_sync()' trace; seen=$?
echo 0 > events/syscalls/sys_enter_sync/enable
[ $seen = 0 ] || { cleanup; exit 0; }
# Each dd writes its block (1 to 255 bytes: s8 1 to -1) to /dev/null and
# 31 bytes of statistics to stderr.
for n in 1 2 3 100 101 200 255; do
	dd if=/dev/zero of=/dev/null bs=$n count=1 2>/dev/null
done
h=$(cat $w/hist)
exp='{ c8*2: 18446744073709551504 } hitcount:          1
{ c8*2: 18446744073709551614 } hitcount:          1
{ c8*2:          2 } hitcount:          1
{ c8*2:          4 } hitcount:          1
{ c8*2:          6 } hitcount:          1
{ c8*2:         62 } hitcount:          7
{ c8*2:        200 } hitcount:          1
{ c8*2:        202 } hitcount:          1'
[ "$(echo "$h" | grep '^{ c8\*2: ')" = "$exp" ] || fail "c8*2 keys: $h"
# count/100 is the kernel's division by a constant, (count * (2^20 /
# 100) + 2^20 - 1) >> 20: 1 for 1 to 100, 2 for 101 and 200, 3 for 255.
exp='{ c8-1000: 18446744073709550717, count/100:          2 } hitcount:          1
{ c8-1000: 18446744073709550716, count/100:          1 } hitcount:          1
{ c8-1000: 18446744073709550647, count/100:          1 } hitcount:          7
{ c8-1000: 18446744073709550619, count/100:          1 } hitcount:          1
{ c8-1000: 18446744073709550618, count/100:          1 } hitcount:          1
{ c8-1000: 18446744073709550617, count/100:          1 } hitcount:          1
{ c8-1000: 18446744073709550615, count/100:          3 } hitcount:          1
{ c8-1000: 18446744073709550560, count/100:          2 } hitcount:          1'
[ "$(echo "$h" | grep '^{ c8-1000: ')" = "$exp" ] || fail "c8-1000,count/100 keys: $h"
echo "$h" | grep -qx '{ common_cpu+1: *[1-9][0-9]* } hitcount:         14' || fail "common_cpu+1 key: $h"
exp='{ count:          1 } hitcount:          1
{ count:          2 } hitcount:          1
{ count:          3 } hitcount:          1'
[ "$(echo "$h" | grep '^{ count: ')" = "$exp" ] || fail "an expression value printed: $h"
# count/10 likewise: 1 for 1 to 3, 10 for 100, 11 for 101, 20 for 200,
# 26 for 255.
exp='{ fd:          1, count/10:          1 } hitcount:          3
{ fd:          1, count/10:         10 } hitcount:          1
{ fd:          1, count/10:         11 } hitcount:          1
{ fd:          1, count/10:         20 } hitcount:          1
{ fd:          1, count/10:         26 } hitcount:          1'
[ "$(grep '^{ fd: ' $s/hist)" = "$exp" ] || fail "sys_enter_write fd,count/10: $(cat $s/hist)"
cleanup
exit 0
