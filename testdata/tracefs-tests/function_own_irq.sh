#!/bin/sh
# description: the function tracer records every call of hrtimer_interrupt, whatever task the timer interrupt came upon: between two reads of /proc/interrupts' LOC line, taken with the tracer on while this shell reads tracefs files, the trace holds at least as many entries as the count went up by (on a mount, many come upon the server's threads)
cleanup() {
	echo 0 > tracing_on
	echo nop > current_tracer
	echo > set_ftrace_filter
	echo 1 > tracing_on
}
fail() { echo "FAIL: $*" >&2; cleanup; exit 1; }
grep -qw function available_tracers || exit 0
grep -q '^ *LOC:' /proc/interrupts || exit 0
# loc: the local timer interrupts so far, summed over the CPUs.
loc() {
	n=0
	for c in $(grep '^ *LOC:' /proc/interrupts | sed 's/^ *LOC://; s/[A-Za-z].*//'); do
		n=$((n + c))
	done
	echo $n
}
echo hrtimer_interrupt > set_ftrace_filter || fail "filter"
echo > trace
echo function > current_tracer || fail "function tracer"
before=$(loc)
i=0
while [ $i -lt 40 ]; do
	cat events/sched/sched_switch/format > /dev/null
	i=$((i + 1))
done
after=$(loc)
echo 0 > tracing_on
hits=$(grep -c ': hrtimer_interrupt <-' trace)
# Hits need a running kernel: an emulated tracefs records none.
[ "$hits" = 0 ] && { cleanup; exit 0; }
[ "$hits" -ge $((after - before)) ] || fail "$hits entries of hrtimer_interrupt for $((after - before)) local timer interrupts: $(grep -v '^#' trace | sed 's/^ *\([^ ]*\) .*/\1/' | sort | uniq -c)"
cleanup
