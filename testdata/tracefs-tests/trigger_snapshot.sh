#!/bin/sh
# description: the snapshot trigger: readback with its count, one per event (EEXIST), bad forms refused, removal by !; with event hits, the trigger allocates the snapshot buffer and swaps it in: the snapshot holds what was traced before the hit
# flags: instance
fail() { echo "FAIL: $*" >&2; echo '!snapshot' >> $t; echo 0 > events/syscalls/sys_enter_sync/enable; exit 1; }
t=events/syscalls/sys_enter_sync/trigger
empty="# Available triggers:
# traceon traceoff snapshot stacktrace enable_event disable_event enable_hist disable_hist hist"
echo snapshot >> $t || fail "add snapshot"
[ "$(cat $t)" = "snapshot:unlimited" ] || fail "readback: $(cat $t)"
[ "$(cat events/syscalls/sys_enter_sync/enable)" = "0*" ] || fail "soft mode: $(cat events/syscalls/sys_enter_sync/enable)"
for c in snapshot 'snapshot:3' 'snapshot if common_pid == 1'; do
	out=$( { echo "$c" >> $t; } 2>&1 ) && fail "second snapshot trigger accepted: $c"
	case $out in *"File exists"*) ;; *) fail "$c: want EEXIST, got: $out" ;; esac
done
echo '!snapshot' >> $t || fail "remove"
[ "$(cat $t)" = "$empty" ] || fail "after removal: $(cat $t)"
for c in 'snapshot+1' 'snapshot:x' 'snapshot:-2' 'snapshots'; do
	out=$( { echo "$c" >> $t; } 2>&1 ) && fail "accepted: $c"
	case $out in *"Invalid argument"*) ;; *) fail "$c: want EINVAL, got: $out" ;; esac
done
echo 'snapshot:2 if common_pid != 0' >> $t || fail "add with a count and a filter"
[ "$(cat $t)" = "snapshot:count=2 if common_pid != 0" ] || fail "count readback: $(cat $t)"
echo '!snapshot' >> $t || fail "remove with a filter"
[ "$(cat $t)" = "$empty" ] || fail "after the second removal: $(cat $t)"
# Hits need a running kernel: ktrace --kernel SNAPSHOT emulates the
# files and records no event (no trigger fires), so the checks end
# here there.
echo > trace
echo 1 > events/syscalls/sys_enter_sync/enable
sync
grep -q 'sys_sync()' trace; seen=$?
echo 0 > events/syscalls/sys_enter_sync/enable
[ $seen = 0 ] || exit 0
echo > trace
echo 0 > snapshot
grep -q '^# \* Snapshot is freed \*' snapshot || fail "snapshot buffer allocated before: $(head -5 snapshot)"
echo 1 > events/syscalls/sys_enter_sync/enable
sync
echo 'snapshot:1' >> $t || fail "add snapshot:1"
# The trigger allocates the spare buffer when it is added.
grep -q '^# \* Snapshot is allocated \*' snapshot || fail "no snapshot buffer: $(head -5 snapshot)"
sync
sync
echo 0 > events/syscalls/sys_enter_sync/enable
[ "$(cat $t)" = "snapshot:count=0" ] || fail "count after a hit: $(cat $t)"
# The first sync, traced before the swap, is in the snapshot; the two
# after it are in the trace.
[ "$(grep -c 'sys_sync()' snapshot)" = 1 ] || fail "snapshot: $(cat snapshot)"
[ "$(grep -c 'sys_sync()' trace)" = 2 ] || fail "trace: $(cat trace)"
echo '!snapshot' >> $t || fail "remove"
echo 0 > snapshot
echo > trace
exit 0
