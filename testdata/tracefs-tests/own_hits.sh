#!/bin/sh
# description: an unfiltered histogram on a probe of a system call's function, and on a system call's event, counts the writes of the tasks that write and nothing else: every writer it keys that is still alive after the workload is this shell
cleanup() {
	echo 0 > events/enable
	{ echo > events/demo/w/trigger; } 2>/dev/null
	{ echo > events/syscalls/sys_enter_write/trigger; } 2>/dev/null
	echo > dynamic_events
}
fail() { echo "FAIL: $*" >&2; cleanup; exit 1; }
echo 'p:demo/w ksys_write count=$arg3:u64' >> dynamic_events || fail "kprobe"
echo 'hist:keys=common_pid.execname:vals=count' >> events/demo/w/trigger || fail "kprobe hist"
echo 'hist:keys=common_pid.execname:vals=count' >> events/syscalls/sys_enter_write/trigger || fail "syscall hist"
echo 1 > events/demo/w/enable
echo 1 > events/syscalls/sys_enter_write/enable
dd if=/dev/zero of=/dev/null bs=64 count=16 2>/dev/null
echo 0 > events/syscalls/sys_enter_write/enable
echo 0 > events/demo/w/enable
# writers FILE: the pids a histogram keys, one per line.
writers() { sed -n 's/^{ common_pid: .*\[ *\([0-9]*\)\] }.*/\1/p' < "$1"; }
for h in events/demo/w/hist events/syscalls/sys_enter_write/hist; do
	# Hits need a running kernel: an emulated tracefs shows no entry.
	grep -q '^ *Hits: 0$' $h && { cleanup; exit 0; }
	grep -q 'common_pid: dd ' $h || fail "$h has no dd: $(cat $h)"
	for pid in $(writers $h); do
		[ "$pid" = "$$" ] && continue
		[ -d /proc/$pid ] && fail "$h keys $pid ($(cat /proc/$pid/comm)), alive and not this shell: $(cat $h)"
	done
done
cleanup
