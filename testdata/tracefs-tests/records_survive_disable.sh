#!/bin/sh
# description: a hit recorded while its event was enabled stays in trace after the event is disabled, whether or not trace was read before (sync: one sys_enter_sync record)
# flags: instance
fail() { echo "FAIL: $*" >&2; echo 0 > events/syscalls/sys_enter_sync/enable; exit 1; }
e=events/syscalls/sys_enter_sync/enable
# Hits need a running kernel: ktrace --kernel SNAPSHOT emulates the
# files and records no event, so this script checks nothing there.
echo > trace
echo 1 > $e
sync
grep -q 'sys_sync()' trace; seen=$?
echo 0 > $e
[ $seen = 0 ] || exit 0
[ "$(grep -c 'sys_sync()' trace)" = 1 ] || fail "read before the disable, then: $(cat trace)"
echo > trace
echo 1 > $e
sync
echo 0 > $e
[ "$(grep -c 'sys_sync()' trace)" = 1 ] || fail "not read before the disable: $(cat trace)"
echo > trace
echo 1 > $e
sync
sync
echo 0 > events/enable
[ "$(grep -c 'sys_sync()' trace)" = 2 ] || fail "disabled through events/enable: $(cat trace)"
echo > trace
exit 0
