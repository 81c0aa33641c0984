#!/bin/sh
# description: current_tracer function records the entries of the functions set_ftrace_filter selects as "FUNC <-CALLER" lines under "# tracer: function"; set_ftrace_notrace and set_ftrace_pid take entries out (function-fork lets a listed task's children in); sym-offset adds +OFF/SIZE; func_stack_trace follows each entry with its stack; func-no-repeats counts an entry repeated on a CPU; a traceoff command stops tracing when its function is called; changing the tracer clears the trace
fail() { echo "FAIL: $*" >&2; echo 0 > tracing_on; echo nop > current_tracer; echo > set_ftrace_filter; echo > set_ftrace_notrace; echo > set_ftrace_pid; echo 0 > options/sym-offset; echo 0 > options/func_stack_trace 2>/dev/null; echo 0 > options/function-fork; echo 0 > options/func-no-repeats; echo 1 > tracing_on; exit 1; }
grep -qw function available_tracers || exit 0
# Hits need a running kernel: ktrace --kernel SNAPSHOT emulates the
# files and records no event, so this script checks nothing there.
echo > trace
echo 1 > events/syscalls/sys_enter_sync/enable
sync
grep -q 'sys_sync()' trace; seen=$?
echo 0 > events/syscalls/sys_enter_sync/enable
[ $seen = 0 ] || exit 0
# work runs dd with tracing on, which is then off while the script reads
# trace (a read of trace calls vfs_read, which would be traced too);
# turning tracing on again starts the function tracer afresh, with an
# empty buffer.
work() { echo 1 > tracing_on; dd if=/dev/zero of=/dev/null bs=1 count=2 2>/dev/null; echo 0 > tracing_on; }
echo vfs_read > set_ftrace_filter || fail "filter"
echo function > current_tracer || fail "function tracer"
[ "$(cat current_tracer)" = function ] || fail "current_tracer: $(cat current_tracer)"
echo 0 > tracing_on
head -1 trace | grep -qx '# tracer: function' || fail "header: $(head -1 trace)"
work
grep -q ' dd-[0-9]* *\[[0-9]*\] ..... *[0-9.]*: vfs_read <-ksys_read$' trace || fail "no dd entry: $(grep -v '^#' trace | head -3)"
grep -v '^#' trace | grep -v ': vfs_read <-' && fail "an entry of another function"
echo vfs_read > set_ftrace_notrace
work
grep -q ': vfs_read' trace && fail "a notrace function traced"
echo > set_ftrace_notrace
echo 1 > set_ftrace_pid
work
grep -q ' dd-' trace && fail "set_ftrace_pid 1 traced dd"
# The shell's children: traced under function-fork only.
echo $$ > set_ftrace_pid
work
grep -q ' dd-' trace && fail "a child traced without function-fork"
echo 1 > options/function-fork
echo $$ > set_ftrace_pid
work
grep -q ' dd-.*: vfs_read <-ksys_read$' trace || fail "function-fork: no dd entry: $(grep -v '^#' trace | head -3)"
echo 0 > options/function-fork
echo > set_ftrace_pid
echo 1 > options/sym-offset
work
grep -q ' dd-.*: vfs_read+0x[0-9a-f]*/0x[0-9a-f]* <-ksys_read+0x[0-9a-f]*/0x[0-9a-f]*$' trace || fail "sym-offset: $(grep ' dd-' trace | head -2)"
echo 0 > options/sym-offset
echo 1 > options/func_stack_trace || fail "func_stack_trace"
work
grep -A3 ' dd-.*<stack trace>' trace | grep -q '^ => ksys_read$' || fail "func_stack_trace: $(grep -v '^#' trace | head -8)"
echo 0 > options/func_stack_trace
echo 1 > options/func-no-repeats || fail "func-no-repeats"
# dd's reads repeat; sync's ksys_sync, a different entry, flushes the
# count, in an entry of the task that called it.
echo 'vfs_read ksys_sync' > set_ftrace_filter
echo 1 > tracing_on; dd if=/dev/zero of=/dev/null bs=1 count=4 2>/dev/null; sync; echo 0 > tracing_on
echo vfs_read > set_ftrace_filter
grep -q ' sync-.*: vfs_read <-ksys_read (repeats: [0-9]*, last_ts: *[0-9]*\.[0-9]*)$' trace || fail "func-no-repeats: $(grep -v '^#' trace | head -4)"
echo 0 > options/func-no-repeats
echo 'vfs_read:traceoff:1' >> set_ftrace_filter || fail "traceoff command"
echo 1 > tracing_on
dd if=/dev/zero of=/dev/null bs=1 count=2 2>/dev/null
[ "$(cat tracing_on)" = 0 ] || fail "traceoff command did not stop tracing"
grep -q 'vfs_read:traceoff:count=0' set_ftrace_filter || fail "count: $(grep traceoff set_ftrace_filter)"
echo '!vfs_read:traceoff:0' >> set_ftrace_filter
echo nop > current_tracer
[ "$(grep -vc '^#' trace)" = 0 ] || fail "the tracer change kept entries"
head -1 trace | grep -qx '# tracer: nop' || fail "header: $(head -1 trace)"
echo 1 > tracing_on
echo > set_ftrace_filter
exit 0
