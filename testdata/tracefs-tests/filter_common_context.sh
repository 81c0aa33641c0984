#!/bin/sh
# description: filters on common_preempt_count and common_flags of static events are taken, as event filters, in a hist trigger's "if" and in an event probe's "if" on the event; with event hits, they test the context the kernel records: a system call's event is at preempt depth 1 (...1.) with no flag, a process's exit at depth 0
e=events/syscalls/sys_enter_write
x=events/sched/sched_process_exit
cleanup() {
	{ echo > $e/trigger; echo > $x/trigger; } 2>/dev/null
	echo 0 > $e/enable; echo 0 > $x/enable
	echo 0 > $e/filter; echo 0 > $x/filter
	{ echo 0 > events/ep/enable; } 2>/dev/null
	echo > dynamic_events
}
fail() { echo "FAIL: $*" >&2; cleanup; exit 1; }
# traced FILTER: with FILTER on sys_enter_write and in a hist trigger's
# "if", dd's writes of 1 and 2 bytes print "PASSED" or "DROPPED" (each
# both in the trace and in the hist).
traced() {
	echo "$1" > $e/filter || fail "filter refused: $1"
	[ "$(cat $e/filter)" = "$1" ] || fail "filter reads back: $(cat $e/filter)"
	echo "hist:keys=count:sort=count if $1" >> $e/trigger || fail "hist refused: $1"
	echo > trace
	echo 1 > $e/enable
	dd if=/dev/zero of=/dev/null bs=1 count=1 2>/dev/null
	dd if=/dev/zero of=/dev/null bs=2 count=1 2>/dev/null
	echo 0 > $e/enable
	t=$(grep -c 'sys_write(fd: 1, buf: [0-9a-f]*, count: [12])' trace)
	h=$(grep -c '^{ count:          [12] } hitcount:          1$' $e/hist)
	{ echo > $e/trigger; } 2>/dev/null
	case $t$h in
	22) echo PASSED ;;
	00) echo DROPPED ;;
	*) fail "$1: $t records traced, $h counted: $(grep sys_write trace) $(cat $e/hist)" ;;
	esac
}
# Hits need a running kernel: ktrace --kernel SNAPSHOT emulates the
# files and records no event, so only the writes are checked there.
echo > trace
echo 1 > events/syscalls/sys_enter_sync/enable
sync
grep -q 'sys_sync()' trace; seen=$?
echo 0 > events/syscalls/sys_enter_sync/enable
if [ $seen != 0 ]; then
	for f in 'common_preempt_count == 1' 'common_flags & 1' 'common_preempt_count > 0 && common_flags == 0'; do
		echo "$f" > $e/filter || fail "filter refused: $f"
		echo "hist:keys=count if $f" >> $e/trigger || fail "hist refused: $f"
		{ echo > $e/trigger; } 2>/dev/null
	done
	cleanup
	exit 0
fi
[ "$(traced 'common_preempt_count == 1 && comm == "dd"')" = PASSED ] || fail "depth 1 dropped"
[ "$(traced 'common_preempt_count == 0 && comm == "dd"')" = DROPPED ] || fail "depth 0 passed"
[ "$(traced 'common_flags == 0 && comm == "dd"')" = PASSED ] || fail "flags 0 dropped"
[ "$(traced 'common_flags & 1 && comm == "dd"')" = DROPPED ] || fail "irqs-off passed"
echo 'common_preempt_count == 0 && comm == "dd"' > $x/filter || fail "exit filter refused"
echo > trace
echo 1 > $x/enable
dd if=/dev/zero of=/dev/null count=1 2>/dev/null
echo 0 > $x/enable
grep -q 'sched_process_exit: comm=dd ' trace || fail "exit at depth 0 dropped: $(cat trace)"
echo 0 > $x/filter
# Event probes' "if" filters read the attached record's.
echo 'e:ep/w syscalls/sys_enter_write count=$count if common_preempt_count == 1 && common_flags == 0 && comm == "dd"' >> dynamic_events || fail "eprobe on sys_enter_write refused"
echo 'e:ep/x sched/sched_process_exit prio=$prio if common_preempt_count == 1 && comm == "dd"' >> dynamic_events || fail "eprobe on sched_process_exit refused"
echo > trace
echo 1 > events/ep/enable || fail "eprobes not enabled"
dd if=/dev/zero of=/dev/null bs=1 count=1 2>/dev/null
echo 0 > events/ep/enable
grep -q ' w: (syscalls.sys_enter_write) count=0x1$' trace || fail "eprobe at depth 1 dropped: $(cat trace)"
grep -q ' x: ' trace && fail "eprobe on the exit at depth 0 passed depth 1: $(cat trace)"
cleanup
exit 0
