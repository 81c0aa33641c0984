#!/bin/sh
# description: hist trigger parse errors: each refused write's errno and its error_log entry (subsystem hist:GROUP:EVENT, message, caret), the sort and field errors, a variable defined twice; errors without an entry; a filter error logged as the filter's (on kernels whose README lists nohitcount, 6.12)
t=events/kmem/kmalloc/trigger
fail() { echo "FAIL: $*" >&2; echo > $t 2>/dev/null; echo > events/sched/sched_wakeup/trigger 2>/dev/null; echo local > trace_clock; exit 1; }
pad() { n=$1 s=; while [ "$n" -gt 0 ]; do s="$s "; n=$((n - 1)); done; printf '%s' "$s"; }
empty="# Available triggers:
# traceon traceoff snapshot stacktrace enable_event disable_event enable_hist disable_hist hist"
# bad COMMAND CARET-COLUMN MESSAGE [FILE]: the write fails with EINVAL
# and logs MESSAGE with the caret under COMMAND's column (no entry when
# MESSAGE is empty).
bad() {
	f=${4:-$t}
	echo > error_log
	out=$( { echo "$1" >> $f; } 2>&1 ) && fail "accepted: $1"
	case $out in *"Invalid argument"*) ;; *) fail "$1: want EINVAL, got: $out" ;; esac
	log=$(cat error_log); log=$(echo "$log" | sed 's/^\[[ 0-9.]*\] //')
	if [ -z "$3" ]; then
		[ -z "$log" ] || fail "$1 logged: $log"
		return
	fi
	g=${f#events/}; g=${g%/trigger}
	exp="hist:${g%/*}:${g#*/}: error: $3
  Command: $1
$(pad $(($2 + 11)))^"
	[ "$log" = "$exp" ] || fail "error_log after $1: $log"
}
bad 'hist:keys=common_pid:vals=bytes_req:sort=common_pid,junk' 52 'Sort field must be a key or a val'
bad 'hist:keys=common_pid:vals=bytes_req:sort=' 36 'Empty assignment'
bad 'hist:keys=common_pid:vals=bytes_req:sort=common_pid,' 36 'Empty sort field'
bad 'hist:keys=common_pid:vals=bytes_req:sort=common_pid.junk' 52 'Invalid sort modifier'
bad 'hist:keys=common_pid:vals=bytes_req,bytes_alloc:sort=common_pid,bytes_req,bytes_alloc' 48 'Too many sort fields (Max = 2)'
bad 'hist:keys=nosuch' 10 "Couldn't find field"
bad 'hist:keys=common_pid:vals=nosuch' 26 "Couldn't find field"
bad 'hist:keys=a,b,c,d' 10 "Couldn't find field"
bad 'hist:keys=common_pid.junk' 21 'Invalid field modifier'
bad 'hist:keys=common_pid:name=' 21 'Empty assignment'
bad 'hist:keys=common_pid:size=0' 0 ''
bad 'hist:keys=common_pid:size=3000000' 0 ''
bad 'hist:keys=common_pid:bogus' 0 ''
bad 'hist:keys=common_pid,bytes_req,bytes_alloc,gfp_flags' 0 ''
bad 'hist:vals=bytes_req' 0 ''
[ "$(cat $t)" = "$empty" ] || fail "after the refused writes: $(cat $t)"
# A filter that does not parse is logged as a filter error (6.12) or
# not at all (6.1).
echo > error_log
echo 'hist:keys=common_pid if nosuch == 1' >> $t 2>/dev/null && fail "accepted a bad filter"
log=$(cat error_log); log=$(echo "$log" | sed 's/^\[[ 0-9.]*\] //')
if grep -q nohitcount README; then
	exp="event filter parse error: error: Field not found
  Command: nosuch == 1
$(pad 18)^"
	[ "$log" = "$exp" ] || fail "error_log after the bad filter: $log"
else
	[ -z "$log" ] || fail "6.1 logged the bad filter: $log"
fi
# A second trigger defining the same variable.
w=events/sched/sched_wakeup/trigger
echo 'hist:keys=common_pid:ts0=common_timestamp.usecs' >> $w || fail "define ts0"
bad 'hist:keys=common_pid:ts0=common_timestamp.usecs' 21 'Variable already defined' $w
[ "$(cat $w)" = "hist:keys=common_pid:vals=hitcount:ts0=common_timestamp.usecs:sort=hitcount:size=2048:clock=global [active]" ] || fail "sched_wakeup: $(cat $w)"
echo '!hist:keys=common_pid:ts0=common_timestamp.usecs' >> $w || fail "remove"
[ "$(cat $w)" = "$empty" ] || fail "sched_wakeup after removal: $(cat $w)"
# A hist trigger with a timestamp set the trace clock to global (its
# clock=), and its removal left it so: back to local.
echo local > trace_clock
exit 0
