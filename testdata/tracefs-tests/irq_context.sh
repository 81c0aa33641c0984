#!/bin/sh
# description: a kprobe's record shows the context it was hit in, as the kernel records it from the CPU's preempt count: a hit in a softirq handler (run_timer_softirq) reads 's' in the third flags column, a hit in a hardirq handler (hrtimer_interrupt) 'h' ('H' when it interrupted a softirq) with interrupts off ('d', or 'D' when it interrupted a section with bottom halves off); a hit in a task's system call reads '.' there
cleanup() {
	echo 0 > events/enable
	echo > kprobe_events
}
fail() { echo "FAIL: $*" >&2; cleanup; exit 1; }
echo 'p:ctx/soft run_timer_softirq' >> kprobe_events || fail "softirq kprobe"
echo 'p:ctx/hard hrtimer_interrupt' >> kprobe_events || fail "hardirq kprobe"
echo 'p:ctx/task ksys_read' >> kprobe_events || fail "syscall kprobe"
echo > trace
echo 1 > events/ctx/enable
# Wait for a timer softirq and a timer interrupt, up to 3 s: an idle
# CPU may have no timer-wheel timer due for a while.
n=0
while [ $n -lt 10 ]; do
	sleep 0.3
	grep -q ' soft: ' trace && grep -q ' hard: ' trace && break
	n=$((n + 1))
done
dd if=/proc/version of=/dev/null 2>/dev/null
echo 0 > events/ctx/enable
# flags EVENT: the flags column of EVENT's lines, one per line.
flags() { sed -n "s/^.*\] \([^ ]*\) *[0-9.]*: $1: .*/\1/p" < trace; }
# Hits need a running kernel: an emulated tracefs records none.
[ -n "$(flags task)" ] || { cleanup; exit 0; }
for f in $(flags soft); do
	case $f in ??s??) ;; *) fail "run_timer_softirq hit with flags $f: $(grep ' soft: ' trace)" ;; esac
done
for f in $(flags hard); do
	case $f in [dD]?[hH]??) ;; *) fail "hrtimer_interrupt hit with flags $f: $(grep ' hard: ' trace)" ;; esac
done
[ -n "$(flags soft)" ] || fail "no run_timer_softirq hit in 3 s: $(grep -v '^#' trace)"
[ -n "$(flags hard)" ] || fail "no hrtimer_interrupt hit in 3 s: $(grep -v '^#' trace)"
for f in $(grep ' dd-[0-9]* .* task: ' trace | sed 's/^.*\] \([^ ]*\) .*/\1/'); do
	case $f in ?[.Nnp].??) ;; *) fail "ksys_read hit in dd with flags $f" ;; esac
done
cleanup
