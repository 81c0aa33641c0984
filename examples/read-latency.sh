#!/bin/sh
# read-latency.sh COMMAND [ARG...]: entry-to-return latency of every
# vfs_read call COMMAND makes, in microseconds, one line per call
# ("vfs_read ret=BYTES latency_us=N"), then a summary line.
# An entry kprobe and a kretprobe on vfs_read are enabled around COMMAND;
# the trace timestamps of each entry/return pair (same pid) give the
# latency.
# The tracefs is $TRACEFS (default /sys/kernel/tracing): a `ktrace mount`
# directory works the same; under `ktrace sh` the default is the emulation.
[ $# -gt 0 ] || { echo "usage: read-latency.sh COMMAND [ARG...]" >&2; exit 2; }
T=${TRACEFS:-/sys/kernel/tracing}
comm=$(basename "$1" | cut -c1-15)
echo 'p:ktrace_ex/rd_entry vfs_read' >> "$T/kprobe_events" || exit 1
echo 'r:ktrace_ex/rd_exit vfs_read ret=$retval:s64' >> "$T/kprobe_events" || exit 1
echo > "$T/trace"
echo 1 > "$T/events/ktrace_ex/enable" || exit 1
"$@" > /dev/null
status=$?
echo 0 > "$T/events/ktrace_ex/enable"
cat "$T/trace" | grep " $comm-[0-9]* " | awk '
{
	pid = $1; sub(/.*-/, "", pid)
	ts = ""
	for (i = 2; i <= NF; i++) if ($i ~ /^[0-9]+\.[0-9]+:$/) { ts = substr($i, 1, length($i) - 1); break }
	if (ts == "") next
	if ($0 ~ / rd_entry: /) { start[pid] = ts; next }
	if ($0 ~ / rd_exit: / && (pid in start)) {
		ret = $0; sub(/.* ret=/, "", ret)
		us = (ts - start[pid]) * 1000000
		printf "vfs_read ret=%s latency_us=%d\n", ret, us
		n++; total += us
		delete start[pid]
	}
}
END { if (n) printf "calls=%d avg_latency_us=%d\n", n, total / n }'
echo '-:ktrace_ex/rd_exit' >> "$T/kprobe_events"
echo '-:ktrace_ex/rd_entry' >> "$T/kprobe_events"
exit $status
