#!/bin/sh
# Definition-rate benchmark: append N kprobe definitions to kprobe_events
# (one echo, one write(2) each), timed with /proc/uptime, then remove them.
# Run in a tracefs directory: the kernel's, a `ktrace mount`, or `ktrace sh`.
# Prints "definitions=N seconds=S".
n=${1:-1000}
echo > kprobe_events || exit 1
read t0 rest < /proc/uptime
i=0
while [ $i -lt $n ]; do
	echo "p:bench$i vfs_read" >> kprobe_events || exit 1
	i=$((i+1))
done
read t1 rest < /proc/uptime
[ "$(wc -l < kprobe_events)" -eq "$n" ] || { echo "lost definitions" >&2; exit 1; }
echo > kprobe_events || exit 1
echo "definitions=$n start=$t0 end=$t1"
