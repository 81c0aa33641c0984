#!/bin/sh
# description: hist keys on small signed fields (a kprobe's s8 and s16 views of vfs_write's count): the trigger reads back; with event hits, a signed field in a compound key prints its value sign-extended to 64 bits (an s8 of -128 as 18446744073709551488, as a lone key does) and sorts as signed; .log2 of a negative value is 2^0 on kernels whose README lists nohitcount (6.12.95's build shifts 1 left by 64 as by 0), 2^64 on 6.1
w=events/demo/sw
cleanup() {
	{ echo > $w/trigger; } 2>/dev/null
	echo 0 > events/enable
	echo > kprobe_events
}
fail() { echo "FAIL: $*" >&2; cleanup; exit 1; }
echo 'p:demo/sw vfs_write c8=$arg3:s8 c16=$arg3:s16 u=$arg3:u64' >> kprobe_events || fail "kprobe refused"
echo 'hist:keys=c8,u:vals=hitcount:sort=c8 if comm == "dd" && u >= 128 && u < 256' >> $w/trigger || fail "compound key refused"
echo 'hist:keys=c16.log2:vals=hitcount if comm == "dd" && u >= 32768' >> $w/trigger || fail "log2 key refused"
echo 'hist:keys=c8.log2:vals=hitcount:sort=c8 if comm == "dd" && u < 8' >> $w/trigger || fail "small log2 key refused"
exp='hist:keys=c8,u:vals=hitcount:sort=c8:size=2048 if comm == "dd" && u >= 128 && u < 256 [active]
hist:keys=c16.log2:vals=hitcount:sort=hitcount:size=2048 if comm == "dd" && u >= 32768 [active]
hist:keys=c8.log2:vals=hitcount:sort=c8.log2:size=2048 if comm == "dd" && u < 8 [active]'
[ "$(cat $w/trigger)" = "$exp" ] || fail "readback: $(cat $w/trigger)"
# Hits need a running kernel: ktrace --kernel SNAPSHOT emulates the
# files and records no event, so the checks end here there.
echo > trace
echo 1 > events/syscalls/sys_enter_sync/enable
sync
grep -q 'sys_sync()' trace; seen=$?
echo 0 > events/syscalls/sys_enter_sync/enable
[ $seen = 0 ] || { cleanup; exit 0; }
for n in 255 128 200 32768 65535 1 2 3; do
	dd if=/dev/zero of=/dev/null bs=$n count=1 2>/dev/null
done
h=$(cat $w/hist)
# The compound key: 128, 200 and 255 bytes are s8 -128, -56 and -1,
# ascending as signed numbers.
exp='{ c8: 18446744073709551488, u:        128 } hitcount:          1
{ c8: 18446744073709551560, u:        200 } hitcount:          1
{ c8: 18446744073709551615, u:        255 } hitcount:          1'
[ "$(echo "$h" | grep '^{ c8: [0-9]*, u: ')" = "$exp" ] || fail "compound key of s8: $h"
# 32768 and 65535 bytes are s16 -32768 and -1: one log2 bucket.
if grep -q nohitcount README; then b='2^0 '; else b='2^64'; fi
echo "$h" | grep -qxF "{ c16: ~ $b } hitcount:          2" || fail "log2 of negative s16 values, want ~ $b: $h"
exp='{ c8: ~ 2^0  } hitcount:          1
{ c8: ~ 2^1  } hitcount:          1
{ c8: ~ 2^2  } hitcount:          1'
[ "$(echo "$h" | grep '^{ c8: ~ ')" = "$exp" ] || fail "log2 of small values: $h"
cleanup
exit 0
