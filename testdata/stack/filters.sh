# The stack tracer's files with the tracer off: what stack_max_size and
# stack_trace_filter take and show. Runs in a tracefs directory; every
# step prints its exit status.
w() { # FILE TEXT [append]
	if [ -n "$3" ]; then echo "$2" >> "$1"; else echo "$2" > "$1"; fi
	echo "w $1 [$2]${3:+ >>} rc=$?"
}
echo "== initial"
cat stack_max_size
cat stack_trace
cat stack_trace_filter
echo "== stack_max_size"
for v in 5 +6 abc -1 0x10 " 7" "8 " 18446744073709551615 18446744073709551616 ""; do
	w stack_max_size "$v"; cat stack_max_size
done
printf 12 > stack_max_size; echo "printf rc=$?"; cat stack_max_size
echo "-- a maximum hides the note"
cat stack_trace
w stack_max_size 0
cat stack_trace | tail -3
echo "== stack_trace_filter"
w stack_trace_filter vfs_read; cat stack_trace_filter
w stack_trace_filter nosuchfn; cat stack_trace_filter
w stack_trace_filter 'vfs_*' ; grep -c . stack_trace_filter
w stack_trace_filter '!vfs_read' a; grep -c vfs_read stack_trace_filter
w stack_trace_filter '!nosuchfn' a; grep -c . stack_trace_filter
w stack_trace_filter 'ksys_read ksys_write' ; cat stack_trace_filter
for c in traceon traceoff traceon:3 stacktrace snapshot dump cpudump enable_event:sched:sched_switch disable_event:sched:sched_switch:2 nosuchcmd; do
	w stack_trace_filter "vfs_read:$c" a
done
cat stack_trace_filter
w stack_trace_filter ':mod:' a; grep -c . stack_trace_filter
w stack_trace_filter 'vfs_read:mod:' a; grep -c . stack_trace_filter
w stack_trace_filter '*:mod:!' a; grep -c . stack_trace_filter
w stack_trace_filter '1' ; cat stack_trace_filter
w stack_trace_filter '' ; cat stack_trace_filter
echo "-- set_ftrace_filter is another list"
w set_ftrace_filter vfs_write
cat stack_trace_filter set_ftrace_filter
w set_ftrace_filter ''
echo "-- no stack files in instances"
mkdir instances/st
ls instances/st | grep stack; echo "grep rc=$?"
rmdir instances/st
