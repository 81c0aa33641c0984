#!/bin/sh
# write-bytes.sh COMMAND [ARG...]: the bytes COMMAND asks vfs_write to
# write, per call and in total ("calls=N bytes=M").
# A kprobe on vfs_write fetches the count argument (the third, %dx on
# x86_64) as u64.
# The tracefs is $TRACEFS, by default /sys/kernel/tracing (lib.sh).
. "$(dirname "$0")/lib.sh"
ex_start write-bytes.sh "$@"
ex_define 'p:ktrace_ex/writes vfs_write count=%dx:u64'
ex_run ktrace_ex/writes "$@"
ex_trace '.* writes: ' | awk '
{ c = $0; sub(/.* count=/, "", c); n++; total += c }
END { printf "calls=%d bytes=%d\n", n, total }'
ex_end ktrace_ex/writes
