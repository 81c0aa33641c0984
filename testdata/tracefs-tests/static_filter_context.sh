#!/bin/sh
# description: a static event's filter may test common_flags and common_preempt_count: "common_flags & 0x08" (TRACE_FLAG_HARDIRQ) on softirq_raise keeps the raises made in hardirqs only, and "common_preempt_count == 0" on raw_syscalls sys_enter keeps a task's system calls, whose records have depth 0
cleanup() {
	echo 0 > events/enable
	echo 0 > events/irq/softirq_raise/filter
	echo 0 > events/raw_syscalls/sys_enter/filter
}
fail() { echo "FAIL: $*" >&2; cleanup; exit 1; }
echo 'common_flags & 0x08' > events/irq/softirq_raise/filter || fail "common_flags filter refused"
[ "$(cat events/irq/softirq_raise/filter)" = 'common_flags & 0x08' ] || fail "readback: $(cat events/irq/softirq_raise/filter)"
echo 'common_preempt_count == 0' > events/raw_syscalls/sys_enter/filter || fail "common_preempt_count filter refused"
echo > trace
echo 1 > events/irq/softirq_raise/enable
echo 1 > events/raw_syscalls/sys_enter/enable
# Wait for a timer interrupt's softirq raise, up to 3 s.
n=0
while [ $n -lt 10 ]; do
	sleep 0.3
	grep -q ' softirq_raise: ' trace && break
	n=$((n + 1))
done
dd if=/proc/version of=/dev/null bs=16 count=2 2>/dev/null
echo 0 > events/enable
# Hits need a running kernel: an emulated tracefs records none.
grep -q ' sys_enter: ' trace || { cleanup; exit 0; }
grep -q ' softirq_raise: ' trace || fail "no softirq_raise in a hardirq in 3 s"
for f in $(sed -n 's/^.*\] \([^ ]*\) *[0-9.]*: softirq_raise: .*/\1/p' < trace); do
	case $f in ??[hH]??) ;; *) fail "softirq_raise recorded outside a hardirq ($f): $(grep ' softirq_raise: ' trace | head)" ;; esac
done
for f in $(sed -n 's/^.*\] \([^ ]*\) *[0-9.]*: sys_enter: .*/\1/p' < trace); do
	case $f in ???.?) ;; *) fail "sys_enter recorded at depth ${f#???}: $(grep ' sys_enter: ' trace | head)" ;; esac
done
grep -q '^ *dd-[0-9]* .* sys_enter: ' trace || fail "no sys_enter of dd: $(grep ' sys_enter: ' trace | head)"
cleanup
