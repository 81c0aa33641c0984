#!/bin/sh
# opens.sh COMMAND [ARG...]: print the files COMMAND opens.
# A kprobe on do_sys_openat2 fetches the path argument (the second, %si on
# x86_64) as a string; only the lines of processes named like COMMAND are
# kept. Works on 6.1 and 6.12; without a probe backend (ktrace) the trace
# stays empty and the script prints nothing.
# The tracefs is $TRACEFS (default /sys/kernel/tracing): a `ktrace mount`
# directory works the same; under `ktrace sh` the default is the emulation.
[ $# -gt 0 ] || { echo "usage: opens.sh COMMAND [ARG...]" >&2; exit 2; }
T=${TRACEFS:-/sys/kernel/tracing}
comm=$(basename "$1" | cut -c1-15)
echo 'p:ktrace_ex/opens do_sys_openat2 dfd=%di:s32 path=+0(%si):string' >> "$T/kprobe_events" || exit 1
echo > "$T/trace"
echo 1 > "$T/events/ktrace_ex/opens/enable" || exit 1
"$@" > /dev/null
status=$?
echo 0 > "$T/events/ktrace_ex/opens/enable"
cat "$T/trace" | grep " $comm-[0-9]* .* opens: " | sed 's/.* path=/path=/'
echo '-:ktrace_ex/opens' >> "$T/kprobe_events"
exit $status
