#!/bin/sh
# description: with event hits, a hist keyed on the kernel stack (common_stacktrace on kernels whose README names it, 6.12; stacktrace on 6.1) prints each distinct stack as frames under its key, and one keyed on common_timestamp.usecs gets an entry per hit (sync: one sys_enter_sync each)
t=events/syscalls/sys_enter_sync/trigger
h=events/syscalls/sys_enter_sync/hist
fail() { echo "FAIL: $*" >&2; echo > $t 2>/dev/null; echo local > trace_clock; exit 1; }
# Hits need a running kernel: ktrace --kernel SNAPSHOT emulates the
# files and records no event, so this script checks nothing there.
echo > trace
echo 1 > events/syscalls/sys_enter_sync/enable
sync
grep -q 'sys_sync()' trace; seen=$?
echo 0 > events/syscalls/sys_enter_sync/enable
[ $seen = 0 ] || exit 0
key=stacktrace
grep -q "special string 'common_stacktrace'" README && key=common_stacktrace
echo "hist:keys=$key" >> $t || fail "stack key"
sync; sync; sync
s=$(cat $h)
echo "$s" | grep -q "^{ $key:$" || fail "no stack key: $s"
echo "$s" | grep -q '^ *do_syscall_64+0x[0-9a-f]*/0x[0-9a-f]*$' || fail "no do_syscall_64 frame: $s"
echo "$s" | grep -q '^} hitcount: *[1-9][0-9]*$' || fail "no hitcount after the frames: $s"
echo "$s" | grep -q '^    Hits: 3$' || fail "want 3 hits: $s"
echo "!hist:keys=$key" >> $t || fail "remove the stack key"
echo 'hist:keys=common_timestamp.usecs' >> $t || fail "timestamp key"
sync; sync; sync
s=$(cat $h)
[ "$(echo "$s" | grep -c '^{ common_timestamp: *[0-9][0-9]* } hitcount: *1$')" = 3 ] || fail "want 3 timestamp entries: $s"
echo '!hist:keys=common_timestamp.usecs' >> $t || fail "remove the timestamp key"
# A hist trigger with a timestamp set the trace clock to global (its
# clock=), and its removal left it so: back to local.
echo local > trace_clock
exit 0
