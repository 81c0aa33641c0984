#!/bin/sh
# description: the stacktrace trigger: readback with its count, one per event (EEXIST), bad forms refused, removal by !; with event hits, each hit puts a kernel stack in the trace until the count runs out
# flags: instance
fail() { echo "FAIL: $*" >&2; echo '!stacktrace' >> $t; exit 1; }
t=events/syscalls/sys_enter_sync/trigger
empty="# Available triggers:
# traceon traceoff snapshot stacktrace enable_event disable_event enable_hist disable_hist hist"
echo stacktrace >> $t || fail "add stacktrace"
[ "$(cat $t)" = "stacktrace:unlimited" ] || fail "readback: $(cat $t)"
for c in stacktrace 'stacktrace:2'; do
	out=$( { echo "$c" >> $t; } 2>&1 ) && fail "second stacktrace trigger accepted: $c"
	case $out in *"File exists"*) ;; *) fail "$c: want EEXIST, got: $out" ;; esac
done
echo '!stacktrace' >> $t || fail "remove"
[ "$(cat $t)" = "$empty" ] || fail "after removal: $(cat $t)"
for c in 'stacktrace:foo' 'stacktrace+1' 'stack' 'stacktrace if nosuch == 1'; do
	out=$( { echo "$c" >> $t; } 2>&1 ) && fail "accepted: $c"
	case $out in *"Invalid argument"*) ;; *) fail "$c: want EINVAL, got: $out" ;; esac
done
[ "$(cat $t)" = "$empty" ] || fail "after the refused writes: $(cat $t)"
# Hits need a running kernel: ktrace --kernel SNAPSHOT emulates the
# files and records no event, so the checks end here there.
echo > trace
echo 1 > events/syscalls/sys_enter_sync/enable
sync
grep -q 'sys_sync()' trace; seen=$?
echo 0 > events/syscalls/sys_enter_sync/enable
[ $seen = 0 ] || exit 0
echo > trace
echo 0 > options/stacktrace
echo 'stacktrace:2' >> $t || fail "add stacktrace:2"
[ "$(cat $t)" = "stacktrace:count=2" ] || fail "count readback: $(cat $t)"
sync
[ "$(grep -c '<stack trace>' trace)" = 1 ] || fail "one hit, stacks: $(cat trace)"
grep -q '^ => ' trace || fail "no frames: $(cat trace)"
[ "$(cat $t)" = "stacktrace:count=1" ] || fail "count after a hit: $(cat $t)"
sync
sync
[ "$(grep -c '<stack trace>' trace)" = 2 ] || fail "three hits of stacktrace:2, stacks: $(grep -c '<stack trace>' trace)"
[ "$(cat $t)" = "stacktrace:count=0" ] || fail "count when spent: $(cat $t)"
echo '!stacktrace' >> $t || fail "remove"
echo > trace
exit 0
