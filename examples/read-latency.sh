#!/bin/sh
# read-latency.sh COMMAND [ARG...]: entry-to-return latency of every
# vfs_read call COMMAND makes, in microseconds, one line per call
# ("vfs_read ret=BYTES latency_us=N"), then a summary line.
# An entry kprobe and a kretprobe on vfs_read are enabled around COMMAND;
# the trace timestamps of each entry/return pair (same pid) give the
# latency.
# The tracefs is $TRACEFS, by default /sys/kernel/tracing (lib.sh).
. "$(dirname "$0")/lib.sh"
ex_start read-latency.sh "$@"
ex_define 'p:ktrace_ex/rd_entry vfs_read' 'r:ktrace_ex/rd_exit vfs_read ret=$retval:s64'
ex_run ktrace_ex "$@" > /dev/null
ex_trace | awk '
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
ex_end ktrace_ex/rd_exit ktrace_ex/rd_entry
