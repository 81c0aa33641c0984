#!/bin/sh
# description: hist trigger expressions: constant operands fold when the trigger is parsed (left to right within a precedence, * and / before + and -, u64 wrap-around, division as the kernel's approximation), expressions with fields read back as written; too many subexpressions, unary minus in a subexpression and division by zero (EDOM) are refused with their error_log entries
# flags: instance
t=events/sched/sched_process_fork/trigger
fail() { echo "FAIL: $*" >&2; echo > $t 2>/dev/null; exit 1; }
pad() { n=$1 s=; while [ "$n" -gt 0 ]; do s="$s "; n=$((n - 1)); done; printf '%s' "$s"; }
# folds EXPR VALUE: x=EXPR reads back as x=VALUE.
folds() {
	echo "hist:keys=common_pid:x=$1" >> $t || fail "refused: $1"
	[ "$(cat $t)" = "hist:keys=common_pid:vals=hitcount:x=$2:sort=hitcount:size=2048 [active]" ] || fail "x=$1 reads back: $(cat $t)"
	echo "!hist:keys=common_pid:x=$1" >> $t || fail "remove x=$1"
}
folds 123 123
folds 16-8-4-2 2
folds 64/8/4/2 1
folds 16-8+4+2 14
folds '4*3/2*2' 12
folds '4+3*2-2' 8
folds '4+6/2-2' 5
folds '7*3-1' 20
folds 2-5 18446744073709551613
folds 100/7 15
folds 10/3 4
folds child_pid/4 child_pid/4
folds 'child_pid*2' 'child_pid*2'
folds 'parent_pid-child_pid' 'parent_pid-child_pid'
# bad EXPR ERRNO-WORDS CARET-COLUMN MESSAGE (no error_log entry when
# MESSAGE is empty)
bad() {
	echo > error_log
	c="hist:keys=common_pid:x=$1"
	out=$( { echo "$c" >> $t; } 2>&1 ) && fail "accepted: $c"
	case $out in *"$2"*) ;; *) fail "$c: want $2, got: $out" ;; esac
	log=$(cat error_log); log=$(echo "$log" | sed 's/^\[[ 0-9.]*\] //')
	exp="hist:sched:sched_process_fork: error: $4
  Command: $c
$(pad $(($3 + 11)))^"
	[ -z "$4" ] && exp=
	[ "$log" = "$exp" ] || fail "error_log after $c: $log"
}
bad '32+10*3/20-4' 'Invalid argument' 26 'Too many subexpressions (3 max)'
bad '1+2+3+4+5' 'Invalid argument' 23 'Too many subexpressions (3 max)'
bad '-(1)+2' 'Invalid argument' 25 'Unary minus not supported in sub-expressions'
bad '3/0' 'Numerical argument out of domain' 25 'Division by zero'
bad 'child_pid/0' 'Numerical argument out of domain' 33 'Division by zero'
bad '-5' 'Invalid argument' 0 ''
grep -q '^hist' $t && fail "left: $(cat $t)"
exit 0
