#!/bin/sh
# description: event filter errors: the write fails (EINVAL, ENOENT for an unbalanced '('), the filter file shows the filter, a caret and parse_error, and error_log holds the same message with the caret under the command; accepted filters read back as written; 0 clears. A trailing || is refused on 6.1 and accepted on kernels whose README lists nohitcount (6.12)
fail() { echo "FAIL: $*" >&2; echo 0 > $f; exit 1; }
f=events/sched/sched_process_fork/filter
pad() { n=$1 s=; while [ "$n" -gt 0 ]; do s="$s "; n=$((n - 1)); done; printf '%s' "$s"; }
# bad FILTER ERRNO-WORDS CARET-COLUMN MESSAGE [LOG-CARET-COLUMN]: the
# filter file's caret stops at the end of the filter, error_log's may not.
bad() {
	echo > error_log
	out=$( { echo "$1" > $f; } 2>&1 ) && fail "accepted: $1"
	case $out in *"$2"*) ;; *) fail "$1: want $2, got: $out" ;; esac
	exp="$1
$(pad $3)^
parse_error: $4"
	[ "$(cat $f)" = "$exp" ] || fail "filter file after $1: $(cat $f)"
	log=$(cat error_log); log=$(echo "$log" | sed 's/^\[[ 0-9.]*\] //')
	exp="event filter parse error: error: $4
  Command: $1
$(pad $((${5:-$3} + 11)))^"
	[ "$log" = "$exp" ] || fail "error_log after $1: $log"
}
[ "$(cat $f)" = none ] || fail "initial: $(cat $f)"
bad 'child_pid ==' 'Invalid argument' 12 'Invalid value (did you forget quotes)?' 13
bad 'nosuch == 1' 'Invalid argument' 7 'Field not found'
bad 'child_pid == abc' 'Invalid argument' 14 'Invalid value (did you forget quotes)?'
bad '(child_pid == 1' 'No such file or directory' 0 "Too many '('"
bad 'parent_comm > "a"' 'Invalid argument' 15 'Illegal operation for field type'
bad 'parent_comm == sh' 'Invalid argument' 16 'Invalid value (did you forget quotes)?'
bad 'child_pid = 1' 'Invalid argument' 11 'Invalid operator'
for ok in 'child_pid == 1 && parent_comm == "sh"' 'parent_comm ~ "s*"' 'child_pid & 1' 'common_cpu == 0' '!(child_pid < 10)' 'parent_pid != 0 || child_pid > 3'; do
	echo "$ok" > $f || fail "refused: $ok"
	[ "$(cat $f)" = "$ok" ] || fail "readback of $ok: $(cat $f)"
done
echo 0 > $f || fail "clear"
[ "$(cat $f)" = none ] || fail "after clear: $(cat $f)"
if grep -q nohitcount README; then
	echo 'child_pid == 1 ||' > $f || fail "trailing || refused"
	[ "$(cat $f)" = 'child_pid == 1 ||' ] || fail "trailing || reads back: $(cat $f)"
else
	bad 'child_pid == 1 ||' 'Invalid argument' 17 'Meaningless filter expression'
fi
echo 0 > $f
exit 0
