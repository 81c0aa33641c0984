#!/bin/sh
# opens.sh COMMAND [ARG...]: print the files COMMAND opens.
# A kprobe on do_sys_openat2 fetches the path argument (the second, %si on
# x86_64) as a string; only the lines of processes named like COMMAND are
# kept. Works on 6.1 and 6.12; without a probe backend (ktrace) the trace
# stays empty and the script prints nothing.
# The tracefs is $TRACEFS, by default /sys/kernel/tracing (lib.sh).
. "$(dirname "$0")/lib.sh"
ex_start opens.sh "$@"
ex_define 'p:ktrace_ex/opens do_sys_openat2 dfd=%di:s32 path=+0(%si):string'
ex_run ktrace_ex/opens "$@" > /dev/null
ex_trace '.* opens: ' | sed 's/.* path=/path=/'
ex_end ktrace_ex/opens
