#!/bin/sh
# description: the function tracer's entries show the context of each call, as function_trace_call takes it: run_timer_softirq in a softirq ('s' in the third column), hrtimer_interrupt in a hardirq with interrupts off ('d' and 'h'), dd's ksys_read in task context at depth 0
cleanup() {
	echo 0 > tracing_on
	echo nop > current_tracer
	echo > set_ftrace_filter
	echo 1 > tracing_on
}
fail() { echo "FAIL: $*" >&2; cleanup; exit 1; }
grep -qw function available_tracers || exit 0
echo 'run_timer_softirq hrtimer_interrupt ksys_read' > set_ftrace_filter || fail "filter"
echo > trace
echo function > current_tracer || fail "function tracer"
# Wait for a timer softirq and a timer interrupt, up to 3 s.
n=0
while [ $n -lt 10 ]; do
	sleep 0.3
	grep -q ': run_timer_softirq <-' trace && grep -q ': hrtimer_interrupt <-' trace && break
	n=$((n + 1))
done
dd if=/proc/version of=/dev/null bs=16 count=2 2>/dev/null
echo 0 > tracing_on
# flags FUNC [TASK]: the flags column of FUNC's entries (of TASK's).
flags() { sed -n "s/^ *${2:-.*}-[0-9]* .*\] \([^ ]*\) *[0-9.]*: $1 <-.*/\1/p" < trace; }
# Hits need a running kernel: an emulated tracefs records none.
[ -n "$(flags ksys_read)" ] || { cleanup; exit 0; }
check() { # FUNC PATTERN WHAT [TASK]
	f=$(flags $1 $4)
	[ -n "$f" ] || fail "no $1 entry: $(grep -v '^#' trace | head -20)"
	for x in $f; do
		case $x in $2) ;; *) fail "$1 entry with flags $x, not $3: $(grep ": $1 <-" trace | head -20)" ;; esac
	done
}
check run_timer_softirq '?[.Nnp]s??' "in a softirq"
check hrtimer_interrupt '[dD]?[hH]??' "in a hardirq"
check ksys_read '.[.Nnp]...' "a task's at depth 0" dd
cleanup
