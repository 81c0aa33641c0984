#!/bin/sh
# description: traceon and traceoff triggers: readback with their count, one of the two per event (EEXIST), bad parameters refused, removal by ! (either name, with or without a count); with event hits, traceoff stops the ring buffer, traceon starts it, a count runs down to 0 (sys_enter_sync fires them: sync)
# flags: instance
fail() { echo "FAIL: $*" >&2; echo 1 > tracing_on; echo '!traceoff' >> $t; exit 1; }
t=events/syscalls/sys_enter_sync/trigger
empty="# Available triggers:
# traceon traceoff snapshot stacktrace enable_event disable_event enable_hist disable_hist hist"
echo traceoff >> $t || fail "add traceoff"
[ "$(cat $t)" = "traceoff:unlimited" ] || fail "readback: $(cat $t)"
[ "$(cat events/syscalls/sys_enter_sync/enable)" = "0*" ] || fail "soft mode: $(cat events/syscalls/sys_enter_sync/enable)"
for c in traceon traceoff 'traceoff:5' 'traceon:2 if common_pid == 0'; do
	out=$( { echo "$c" >> $t; } 2>&1 ) && fail "second trigger accepted: $c"
	case $out in *"File exists"*) ;; *) fail "$c: want EEXIST, got: $out" ;; esac
done
# traceon and traceoff are one kind: either name removes the other.
echo '!traceon' >> $t || fail "remove by !traceon"
[ "$(cat $t)" = "$empty" ] || fail "after !traceon: $(cat $t)"
[ "$(cat events/syscalls/sys_enter_sync/enable)" = 0 ] || fail "soft mode left: $(cat events/syscalls/sys_enter_sync/enable)"
echo '!traceoff' >> $t || fail "removing a missing trigger fails"
for c in 'traceoff:badparam' 'traceoff+0' 'traceon:-1' 'traceon:+3'; do
	out=$( { echo "$c" >> $t; } 2>&1 ) && fail "accepted: $c"
	case $out in *"Invalid argument"*) ;; *) fail "$c: want EINVAL, got: $out" ;; esac
done
[ "$(cat $t)" = "$empty" ] || fail "after the refused writes: $(cat $t)"
echo 'traceon:3' >> $t || fail "add traceon:3"
[ "$(cat $t)" = "traceon:count=3" ] || fail "count readback: $(cat $t)"
echo '!traceon:0' >> $t || fail "remove with a count"
[ "$(cat $t)" = "$empty" ] || fail "after !traceon:0: $(cat $t)"
# The count is parsed as the kernel's kstrtoul does (base 0, one
# trailing newline or space), and what follows a second ':' is ignored;
# an empty count is no count.
for c in 'traceon:0x3|traceon:count=3' 'traceon:1:2|traceon:count=1' 'traceon:|traceon:unlimited' 'traceon:0|traceon:count=0'; do
	echo "${c%|*}" >> $t || fail "refused: ${c%|*}"
	[ "$(cat $t)" = "${c#*|}" ] || fail "${c%|*} reads back: $(cat $t)"
	echo '!traceon' >> $t
done
# Hits need a running kernel: ktrace --kernel SNAPSHOT emulates the
# files and records no event, so the checks end here there.
echo > trace
echo 1 > events/syscalls/sys_enter_sync/enable
sync
grep -q 'sys_sync()' trace; seen=$?
echo 0 > events/syscalls/sys_enter_sync/enable
[ $seen = 0 ] || exit 0
echo 'traceoff' >> $t || fail "add traceoff"
sync
[ "$(cat tracing_on)" = 0 ] || fail "traceoff did not stop tracing"
echo '!traceoff' >> $t || fail "remove traceoff"
echo 'traceon:1' >> $t || fail "add traceon:1"
sync
[ "$(cat tracing_on)" = 1 ] || fail "traceon did not start tracing"
[ "$(cat $t)" = "traceon:count=0" ] || fail "count after a hit: $(cat $t)"
echo 0 > tracing_on
sync
[ "$(cat tracing_on)" = 0 ] || fail "a spent traceon fired"
echo 1 > tracing_on
echo '!traceon' >> $t || fail "remove traceon"
exit 0
