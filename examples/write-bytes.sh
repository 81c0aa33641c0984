#!/bin/sh
# write-bytes.sh COMMAND [ARG...]: the bytes COMMAND asks vfs_write to
# write, per call and in total ("calls=N bytes=M").
# A kprobe on vfs_write fetches the count argument (the third, %dx on
# x86_64) as u64.
# The tracefs is $TRACEFS (default /sys/kernel/tracing): a `ktrace mount`
# directory works the same; under `ktrace sh` the default is the emulation.
[ $# -gt 0 ] || { echo "usage: write-bytes.sh COMMAND [ARG...]" >&2; exit 2; }
T=${TRACEFS:-/sys/kernel/tracing}
comm=$(basename "$1" | cut -c1-15)
echo 'p:ktrace_ex/writes vfs_write count=%dx:u64' >> "$T/kprobe_events" || exit 1
echo > "$T/trace"
echo 1 > "$T/events/ktrace_ex/writes/enable" || exit 1
"$@"
status=$?
echo 0 > "$T/events/ktrace_ex/writes/enable"
cat "$T/trace" | grep " $comm-[0-9]* .* writes: " | awk '
{ c = $0; sub(/.* count=/, "", c); n++; total += c }
END { printf "calls=%d bytes=%d\n", n, total }'
echo '-:ktrace_ex/writes' >> "$T/kprobe_events"
exit $status
