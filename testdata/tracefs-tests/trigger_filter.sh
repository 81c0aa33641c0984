#!/bin/sh
# description: a trigger's "if" filter: read back after the count, refused when it does not parse (EINVAL; logged in error_log on kernels whose README lists nohitcount, 6.12), ignored when removing; with event hits, the trigger acts only on hits that pass it
fail() { echo "FAIL: $*" >&2; echo 1 > tracing_on; echo '!traceoff' >> $t; exit 1; }
t=events/syscalls/sys_enter_sync/trigger
empty="# Available triggers:
# traceon traceoff snapshot stacktrace enable_event disable_event enable_hist disable_hist hist"
echo > error_log
for c in 'traceoff if a' 'traceoff if common_pid=0' 'traceoff if common_pid==b' 'traceoff if common_pid == __syscall_nr' 'traceoff if nosuch == 1'; do
	out=$( { echo "$c" >> $t; } 2>&1 ) && fail "accepted: $c"
	case $out in *"Invalid argument"*) ;; *) fail "$c: want EINVAL, got: $out" ;; esac
done
[ "$(cat $t)" = "$empty" ] || fail "after the refused writes: $(cat $t)"
log=$(cat error_log); log=$(echo "$log" | sed 's/^\[[ 0-9.]*\] //')
if grep -q nohitcount README; then
	exp=$(printf '%s\n' \
		'event filter parse error: error: Field not found' \
		'  Command: a' \
		'             ^' \
		'event filter parse error: error: Invalid operator' \
		'  Command: common_pid=0' \
		'                      ^' \
		'event filter parse error: error: Invalid value (did you forget quotes)?' \
		'  Command: common_pid==b' \
		'                        ^' \
		'event filter parse error: error: Invalid value (did you forget quotes)?' \
		'  Command: common_pid == __syscall_nr' \
		'                          ^' \
		'event filter parse error: error: Field not found' \
		'  Command: nosuch == 1' \
		'                  ^')
	[ "$log" = "$exp" ] || fail "error_log: $log"
else
	[ -z "$log" ] || fail "6.1 logs no trigger filter error: $log"
fi
# Accepted filters read back as written, after the count.
for f in 'common_pid <= 0' 'common_pid >= 0' '__syscall_nr == 162 && common_pid != 0' '__syscall_nr >= 0 || common_pid >= 0' 'common_pid & 1'; do
	echo "traceoff:4 if $f" >> $t || fail "refused: $f"
	[ "$(cat $t)" = "traceoff:count=4 if $f" ] || fail "readback of $f: $(cat $t)"
	out=$( { echo "traceon if $f" >> $t; } 2>&1 ) && fail "a second traceon/traceoff with a filter accepted"
	echo '!traceoff' >> $t || fail "removal ignoring the filter"
	[ "$(cat $t)" = "$empty" ] || fail "after removing $f: $(cat $t)"
done
# Hits need a running kernel: ktrace --kernel SNAPSHOT emulates the
# files and records no event, so the checks end here there.
echo > trace
echo 1 > events/syscalls/sys_enter_sync/enable
sync
grep -q 'sys_sync()' trace; seen=$?
echo 0 > events/syscalls/sys_enter_sync/enable
[ $seen = 0 ] || exit 0
echo 'traceoff:3 if common_pid == 0' >> $t || fail "add traceoff if common_pid == 0"
sync
[ "$(cat tracing_on)" = 1 ] || fail "a filtered-out hit stopped tracing"
[ "$(cat $t)" = "traceoff:count=3 if common_pid == 0" ] || fail "count used by a filtered-out hit: $(cat $t)"
echo '!traceoff' >> $t
echo 'traceoff:3 if common_pid != 0' >> $t || fail "add traceoff if common_pid != 0"
sync
[ "$(cat tracing_on)" = 0 ] || fail "a passing hit did not stop tracing"
[ "$(cat $t)" = "traceoff:count=2 if common_pid != 0" ] || fail "count after a passing hit: $(cat $t)"
echo 1 > tracing_on
echo '!traceoff' >> $t || fail "remove"
exit 0
