#!/bin/sh
# description: a kprobe on hrtimer_interrupt records every local timer interrupt, whatever task it came upon: between two reads of /proc/interrupts' LOC line, taken with the probe enabled while this shell reads tracefs files, the trace holds at least as many hits as the count went up by (on a mount, many of them come upon the server's threads)
cleanup() {
	echo 0 > events/enable
	echo > kprobe_events
}
fail() { echo "FAIL: $*" >&2; cleanup; exit 1; }
grep -q '^ *LOC:' /proc/interrupts || exit 0
# loc: the local timer interrupts so far, summed over the CPUs.
loc() {
	n=0
	for c in $(grep '^ *LOC:' /proc/interrupts | sed 's/^ *LOC://; s/[A-Za-z].*//'); do
		n=$((n + c))
	done
	echo $n
}
echo 'p:tick/t hrtimer_interrupt' >> kprobe_events || fail "kprobe"
echo > trace
echo 1 > events/tick/t/enable
before=$(loc)
i=0
while [ $i -lt 40 ]; do
	cat events/sched/sched_switch/format > /dev/null
	i=$((i + 1))
done
after=$(loc)
echo 0 > events/tick/t/enable
hits=$(grep -c ' t: (hrtimer_interrupt+' trace)
# Hits need a running kernel: an emulated tracefs records none.
[ "$hits" = 0 ] && { cleanup; exit 0; }
[ "$hits" -ge $((after - before)) ] || fail "$hits hits of hrtimer_interrupt for $((after - before)) local timer interrupts: $(grep -v '^#' trace | sed 's/^ *\([^ ]*\) .*/\1/' | sort | uniq -c)"
cleanup
