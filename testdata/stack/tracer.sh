# The stack tracer at work, switched by the kernel's sysctl: with the
# filter empty it measures some stack, with the filter on ksys_read the
# deepest stack starts at ksys_read. Prints what holds for every run.
w() { echo "$2" > "$1"; echo "w $1 [$2] rc=$?"; }
entries() { set -- $(head -1 stack_trace); echo "${4#(}"; }
w stack_trace_filter ''
w stack_max_size 0
w /proc/sys/kernel/stack_tracer_enabled 1
dd if=/proc/self/stat of=/dev/null 2>/dev/null
w /proc/sys/kernel/stack_tracer_enabled 0
[ "$(cat stack_max_size)" -gt 0 ] && echo "max > 0"
[ "$(grep -c '^ *[0-9]*) ' stack_trace)" = "$(entries)" ] && echo "one line per entry"
grep -q 'Stack tracer disabled' stack_trace || echo "no disabled note"
w stack_trace_filter ksys_read
w stack_max_size 0
w /proc/sys/kernel/stack_tracer_enabled 1
dd if=/proc/self/stat of=/dev/null 2>/dev/null
w /proc/sys/kernel/stack_tracer_enabled 0
grep ' 0)' stack_trace | grep -q 'ksys_read+' && echo "deepest at ksys_read"
set -- $(grep ' 0)' stack_trace)
[ "$2" = "$(cat stack_max_size)" ] && echo "depth of entry 0 is the max"
w stack_trace_filter ''
w stack_max_size 0
