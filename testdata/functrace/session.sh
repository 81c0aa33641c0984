# ktrace functrace golden session: the function tracer and its control files
# (current_tracer, set_ftrace_filter/notrace, function commands, set_ftrace_pid,
# set_ftrace_notrace_pid, trace output options). Captured from the pinned kernels:
#   (cd testdata/functrace/rawwrite && CGO_ENABLED=0 go build -o /tmp/rawwrite .)
#   VMSH_FILES=/tmp/rawwrite:/bin/rawwrite tools/vmsh 6.12 testdata/functrace/session.sh > testdata/functrace/6.12.out
#   VMSH_FILES=/tmp/rawwrite:/bin/rawwrite tools/vmsh 6.1  testdata/functrace/session.sh > testdata/functrace/6.1.out
# (busybox sh in the guest, cwd /sys/kernel/tracing, one CPU; ~25 s under TCG.)
# /bin/rawwrite [-a|-n] FILE CHUNK... opens FILE (O_TRUNC; -a O_APPEND; -n neither)
# and issues exactly one write(2) per CHUNK, printing each return value or errno.
# "run CMD" prints "$ CMD", the command's stdout/stderr, then "rc=$?" (busybox
# reports a failed write as "sh: write error: <strerror>").
# What varies between boots: raw trace lines (pid, timestamp, and rarely the
# need-resched flag 'N'), trampoline addresses in enabled_functions, the stack of
# the stacktrace probe's first frame. Lines produced through norm() have the pid
# replaced by PID and timestamps by TS. Everything else is deterministic.
RW=/bin/rawwrite
sec() { echo; echo "### $*"; }
run() { echo "\$ $*"; eval "$*" 2>&1; echo "rc=$?"; }
show() { echo "--- $1"; cat "$1" 2>&1; }
rd() { read -r v < "$1"; echo "$1: $v"; }   # builtin read: no fork
# trace body without the header, timestamps and pids replaced (TS, PID)
norm() { sed -e 's/^ *\([^ ]*\)-[0-9][0-9]* *\[/\1-PID [/' -e 's/ *[0-9][0-9]*\.[0-9]*: / TS: /' -e 's/last_ts: *[0-9]*\.[0-9]*/last_ts: TS/'; }
body() { grep -v '^#' trace | norm; }
# one fork of the shell with tracing on only around it
one() { echo 0 > tracing_on; echo > trace; echo 1 > tracing_on; (true); echo 0 > tracing_on; }

sec "files"
for f in available_tracers current_tracer available_filter_functions available_filter_functions_addrs \
  enabled_functions touched_functions set_ftrace_filter set_ftrace_notrace set_ftrace_pid \
  set_ftrace_notrace_pid dyn_ftrace_total_info function_profile_enabled trace_stat \
  stack_trace stack_trace_filter stack_max_size set_graph_function set_graph_notrace \
  max_graph_depth trace_pipe snapshot; do
  if [ -e $f ]; then echo "$f: $(busybox stat -c %a $f)"; else echo "$f: absent"; fi
done
for f in set_ftrace_filter set_ftrace_notrace set_ftrace_pid set_ftrace_notrace_pid; do
  mkdir -p instances/fi; [ -e instances/fi/$f ] && echo "instances/fi/$f: present" || echo "instances/fi/$f: absent"
done
ls instances/fi | tr '\n' ' '; echo; rmdir instances/fi

sec "available_tracers / current_tracer"
show available_tracers
show current_tracer
show buffer_size_kb
run "echo bogus > current_tracer"
show current_tracer
show buffer_size_kb
run "echo > current_tracer"
run "echo 'function nop' > current_tracer"
run "echo '  nop  ' > current_tracer"
run "echo -n nop > current_tracer"
run "printf 'nop%200s\\n' '' > current_tracer"
run "printf 'nop%90s junk\\n' '' > current_tracer"
run "$RW current_tracer 'nop\n' 'nop'"
run "$RW current_tracer 'bogus'"
show current_tracer

sec "trace_options and options/ under nop"
show trace_options
ls options | tr '\n' ' '; echo
show options/func_stack_trace
show options/func-no-repeats
show options/function-fork
show options/function-trace
run "echo func_stack_trace > trace_options"
run "echo nofunc_stack_trace > trace_options"
run "echo 2 > options/func_stack_trace"
run "echo 1 > options/func_stack_trace"
show options/func_stack_trace
run "echo 0 > options/func_stack_trace"

sec "empty filter files"
show set_ftrace_filter
show set_ftrace_notrace
show set_ftrace_pid
show set_ftrace_notrace_pid
show enabled_functions
[ -e touched_functions ] && show touched_functions
head -3 available_filter_functions
[ -e available_filter_functions_addrs ] && head -3 available_filter_functions_addrs
show dyn_ftrace_total_info

sec "filter: exact, order, dedup, append, truncate"
run "echo kernel_clone > set_ftrace_filter"
show set_ftrace_filter
run "echo vfs_readlink vfs_read vfs_readv > set_ftrace_filter"
show set_ftrace_filter
run "echo kernel_clone >> set_ftrace_filter"
show set_ftrace_filter
run "echo kernel_clone >> set_ftrace_filter"
show set_ftrace_filter
run "printf 'schedule\tksys_read\n\n  ksys_write  \n' >> set_ftrace_filter"
show set_ftrace_filter
run "echo __send_ipi_mask > set_ftrace_filter"
show set_ftrace_filter
run "echo > set_ftrace_filter"
show set_ftrace_filter

sec "filter: globs"
for p in 'vfs_rea*' '*_sys_getpid' '*sys_getpi*' 'ksys_rea?' 'ksys_[rw]*' 'vfs_rea\d' 'ksys_*_helper' '*' 'ksys_read*'; do
  run "echo '$p' > set_ftrace_filter"
  echo "count=$(grep -vc '^#' set_ftrace_filter)"; [ "$p" = '*' ] || show set_ftrace_filter
done
run "echo 'vfs_rea*' > set_ftrace_filter"
run "echo '!vfs_read' >> set_ftrace_filter"
show set_ftrace_filter
run "echo '!vfs_rea*' >> set_ftrace_filter"
show set_ftrace_filter
run "echo 'ksys_read' > set_ftrace_filter"
run "echo '!nonexistent_fn' >> set_ftrace_filter"
show set_ftrace_filter
run "echo '!*' >> set_ftrace_filter"
show set_ftrace_filter

sec "filter: index"
run "echo 1 > set_ftrace_filter"
show set_ftrace_filter
run "echo 3 2 >> set_ftrace_filter"
show set_ftrace_filter
run "echo '!2' >> set_ftrace_filter"
show set_ftrace_filter
run "echo 99999999 > set_ftrace_filter"
show set_ftrace_filter
run "echo 0 > set_ftrace_filter"
run "echo 0x2 > set_ftrace_filter"
show set_ftrace_filter
run "echo 2abc > set_ftrace_filter"
show set_ftrace_filter

sec "filter: errors and partial commits"
run "echo nonexistent_fn > set_ftrace_filter"
show set_ftrace_filter
run "echo kernel_clone nonexistent_fn vfs_read > set_ftrace_filter"
show set_ftrace_filter
run "echo -n nonexistent_fn > set_ftrace_filter"
show set_ftrace_filter
run "echo -n vfs_read > set_ftrace_filter"
show set_ftrace_filter
run "echo 'kernel_clone:' > set_ftrace_filter"
show set_ftrace_filter
run "echo 'kernel_clone:bogus' > set_ftrace_filter"
run "echo 'kernel_clone:bogus:1' > set_ftrace_filter"
long=$(printf '%0600d' 0 | tr 0 a)
run "echo $long > set_ftrace_filter"
show set_ftrace_filter
run "echo kernel_clone $long vfs_read > set_ftrace_filter"
show set_ftrace_filter

sec "filter: raw write(2) chunks"
run "$RW set_ftrace_filter 'kernel_clone vfs_read\n'"
show set_ftrace_filter
run "$RW set_ftrace_filter '  kernel_clone   vfs_read  ' 'ksys_read'"
show set_ftrace_filter
run "$RW set_ftrace_filter 'kernel_' 'clone' ' vfs_' 'read\n'"
show set_ftrace_filter
run "$RW set_ftrace_filter 'ksys_read' ''"
show set_ftrace_filter
run "$RW set_ftrace_filter '   ' '\n\n' 'ksys_write\n'"
show set_ftrace_filter
run "$RW set_ftrace_filter 'ksys_read\0vfs_read\n'"
show set_ftrace_filter
run "$RW set_ftrace_filter 'nonexistent_fn\n' 'ksys_read\n'"
show set_ftrace_filter
run "$RW set_ftrace_filter 'ksys_read\n' 'nonexistent_fn' "
show set_ftrace_filter
run "$RW -a set_ftrace_filter 'vfs_read\n'"
show set_ftrace_filter
run "$RW -n set_ftrace_filter 'kernel_clone\n'"
show set_ftrace_filter

sec "filter: takes effect at close"
echo ksys_read > set_ftrace_filter
exec 3> set_ftrace_filter
echo "after open O_TRUNC:"; cat set_ftrace_filter
echo kernel_clone >&3
echo "after write:"; cat set_ftrace_filter
exec 3>&-
echo "after close:"; cat set_ftrace_filter
exec 3>> set_ftrace_filter
echo vfs_read >&3
echo "append, after write:"; cat set_ftrace_filter
exec 3>&-
echo "append, after close:"; cat set_ftrace_filter
echo > set_ftrace_filter

sec "notrace"
run "echo kernel_clone > set_ftrace_notrace"
show set_ftrace_notrace
run "echo 'vfs_rea*' >> set_ftrace_notrace"
show set_ftrace_notrace
run "echo '!vfs_read' >> set_ftrace_notrace"
show set_ftrace_notrace
run "echo nonexistent_fn >> set_ftrace_notrace"
run "echo 'kernel_clone:traceoff' >> set_ftrace_notrace"
show set_ftrace_notrace
run "echo > set_ftrace_notrace"
show set_ftrace_notrace

sec ":mod:"
run "echo ':mod:ext4' > set_ftrace_filter"
show set_ftrace_filter
run "echo '*:mod:ext4' >> set_ftrace_filter"
run "echo 'ext4_*:mod:ext4' >> set_ftrace_filter"
run "echo 'kernel_clone' >> set_ftrace_filter"
show set_ftrace_filter
run "echo '!ext4_*:mod:ext4' >> set_ftrace_filter"
show set_ftrace_filter
run "echo '!foo:mod:ext4' >> set_ftrace_filter"
run "echo '!*:mod:ext4' >> set_ftrace_filter"
show set_ftrace_filter
run "echo 'xfs_*:mod:xfs' > set_ftrace_filter"
show set_ftrace_filter
run "echo kernel_clone > set_ftrace_filter"
show set_ftrace_filter
run "echo 'xfs_*:mod:xfs' >> set_ftrace_filter"
show set_ftrace_filter
echo "open O_TRUNC for write, no write:"; : > set_ftrace_filter
show set_ftrace_filter
run "echo '*:mod:xfs' > set_ftrace_notrace"
show set_ftrace_notrace
run "echo '*:mod:' > set_ftrace_filter"
show set_ftrace_filter
run "echo 'ksys_msgget:traceoff vfs_read *:mod:xfs kernel_clone' > set_ftrace_filter"
show set_ftrace_filter
run "echo '!ksys_msgget:traceoff' >> set_ftrace_filter"
echo > set_ftrace_notrace; echo > set_ftrace_filter

sec "function commands (on ksys_msgget/ksys_sem*/ksys_shm*, never called here)"
F=ksys_msgget
run "echo '$F:traceoff' > set_ftrace_filter"
show set_ftrace_filter
run "echo '$F:traceoff' >> set_ftrace_filter"
run "echo '$F:traceoff:5' >> set_ftrace_filter"
run "echo '$F:traceon' >> set_ftrace_filter"
run "echo '$F:traceon:0x10' >> set_ftrace_filter"
run "echo '$F:snapshot' >> set_ftrace_filter"
run "echo '$F:snapshot:2' >> set_ftrace_filter"
run "echo '$F:stacktrace' >> set_ftrace_filter"
run "echo '$F:stacktrace:3' >> set_ftrace_filter"
run "echo '$F:dump' >> set_ftrace_filter"
run "echo '$F:cpudump' >> set_ftrace_filter"
run "echo '$F:enable_event:sched:sched_switch' >> set_ftrace_filter"
run "echo '$F:enable_event:sched:sched_wakeup:2' >> set_ftrace_filter"
run "echo '$F:disable_event:sched:sched_process_fork' >> set_ftrace_filter"
run "echo '$F:enable_event:sched:sched_switch' >> set_ftrace_filter"
run "echo '$F:enable_event:sched:sched_waking' >> set_ftrace_filter"
run "echo '$F:disable_event:sched:sched_switch' >> set_ftrace_filter"
run "echo '!$F:enable_event:sched:nonexistent' >> set_ftrace_filter"
run "echo '$F:stacktrace:count=2' >> set_ftrace_filter"
show set_ftrace_filter
run "echo '!$F:disable_event:sched:sched_switch' >> set_ftrace_filter"
show events/sched/sched_switch/enable
show events/sched/sched_process_fork/enable
show events/sched/sched_switch/trigger
show snapshot | head -3
run "echo 'ksys_semget:traceoff' > set_ftrace_filter"
echo "O_TRUNC (no plain functions written) kept the probes:"
show set_ftrace_filter
run "echo kernel_clone > set_ftrace_filter"
show set_ftrace_filter
echo > set_ftrace_filter
run "echo '!$F:traceoff' >> set_ftrace_filter"
run "echo '!$F:traceoff' >> set_ftrace_filter"
run "echo '!$F:traceoff:0' >> set_ftrace_filter"
run "echo '!ksys_semget:traceoff' >> set_ftrace_filter"
run "echo '!ksys_semget:traceoff' >> set_ftrace_filter"
run "echo '!$F:traceon:' >> set_ftrace_filter"
run "echo '!*:traceon' >> set_ftrace_filter"
run "echo '!$F:snapshot' >> set_ftrace_filter"
run "echo '!$F:snapshot:1' >> set_ftrace_filter"
run "echo '!$F:stacktrace' >> set_ftrace_filter"
run "echo '!$F:stacktrace:9' >> set_ftrace_filter"
run "echo '!$F:dump' >> set_ftrace_filter"
run "echo '!$F:cpudump' >> set_ftrace_filter"
run "echo '!$F:enable_event:sched:sched_switch' >> set_ftrace_filter"
run "echo '!$F:enable_event:sched:sched_wakeup:1' >> set_ftrace_filter"
run "echo '!$F:disable_event:sched:sched_process_fork' >> set_ftrace_filter"
run "echo '!$F:disable_event:sched:sched_process_fork' >> set_ftrace_filter"
show set_ftrace_filter
show events/sched/sched_switch/enable
show events/sched/sched_process_fork/enable
echo "command errors:"
run "echo '$F:traceoff:abc' > set_ftrace_filter"
run "echo '$F:traceoff:-1' > set_ftrace_filter"
run "echo '$F:traceoff:' > set_ftrace_filter"
show set_ftrace_filter
run "echo '!$F:traceoff:' >> set_ftrace_filter"
run "echo '$F:traceoff:3:junk' > set_ftrace_filter"
show set_ftrace_filter
run "echo '!$F:traceoff:3' >> set_ftrace_filter"
run "echo 'nonexistent_fn:traceoff' > set_ftrace_filter"
run "echo '!nonexistent_fn:traceoff' > set_ftrace_filter"
run "echo '$F:enable_event:sched' > set_ftrace_filter"
run "echo '$F:enable_event:sched:nonexistent' > set_ftrace_filter"
run "echo '$F:enable_event' > set_ftrace_filter"
run "echo '$F:enable_event:sched:sched_switch:abc' > set_ftrace_filter"
run "echo '$F:enable_event:sched:sched_switch:' > set_ftrace_filter"
run "echo 'nonexistent_fn:enable_event:sched:sched_switch' > set_ftrace_filter"
run "echo '$F:TRACEOFF' > set_ftrace_filter"
run "echo ':traceoff' > set_ftrace_filter"
run "echo '$F:dump:7' > set_ftrace_filter"
run "echo '$F:cpudump:7' >> set_ftrace_filter"
show set_ftrace_filter
run "echo '!$F:dump:7' >> set_ftrace_filter"
run "echo '!$F:cpudump:7' >> set_ftrace_filter"
show set_ftrace_filter
echo "glob probes (hash order):"
run "echo 'ksys_sem*:traceoff' > set_ftrace_filter"
show set_ftrace_filter
run "echo 'ksys_msg*:traceoff' >> set_ftrace_filter"
show set_ftrace_filter
run "echo 'ksys_shm*:traceon' >> set_ftrace_filter"
run "echo '$F:stacktrace' >> set_ftrace_filter"
show set_ftrace_filter
run "echo '!ksys_sem*:traceoff' >> set_ftrace_filter"
show set_ftrace_filter
run "echo '!*:traceoff' >> set_ftrace_filter"
run "echo '!*:traceon' >> set_ftrace_filter"
run "echo '!:stacktrace' >> set_ftrace_filter"
show set_ftrace_filter
run "echo 'ksys_s*:traceoff' > set_ftrace_filter"
show set_ftrace_filter
run "echo 'ksys_semget:traceoff' >> set_ftrace_filter"
run "echo 'ksys_sem*:traceoff' >> set_ftrace_filter"
run "echo 'ksys_msg*:traceoff' >> set_ftrace_filter"
echo "count after ksys_msg*: $(grep -c traceoff set_ftrace_filter)"
run "echo '!ksys_msg*:traceoff' >> set_ftrace_filter"
run "echo '!ksys_s*:traceoff' >> set_ftrace_filter"
show tracing_on

sec "probes firing (current_tracer=nop, one fork)"
echo 'kernel_clone:stacktrace:1' > set_ftrace_filter
one; echo "--- trace after stacktrace:1"; body
show set_ftrace_filter
echo '!kernel_clone:stacktrace:0' >> set_ftrace_filter
echo 'kernel_clone:enable_event:sched:sched_process_fork:1' > set_ftrace_filter
rd events/sched/sched_process_fork/enable
one; echo "--- trace after enable_event:sched:sched_process_fork:1"; body | sed 's/pid=[0-9]*/pid=N/g'
rd events/sched/sched_process_fork/enable
show set_ftrace_filter
one; echo "--- second fork (count exhausted, event stays soft-enabled)"; body | sed 's/pid=[0-9]*/pid=N/g'
echo '!kernel_clone:enable_event:sched:sched_process_fork:0' >> set_ftrace_filter
rd events/sched/sched_process_fork/enable
echo 0 > events/sched/sched_process_fork/enable
echo 'kernel_clone:traceoff' > set_ftrace_filter
echo > trace; echo 1 > tracing_on; (true); echo "traceoff probe (nop tracer): tracing_on=$(cat tracing_on)"
echo '!kernel_clone:traceoff' >> set_ftrace_filter
echo 'kernel_clone:traceon' > set_ftrace_filter
echo 0 > tracing_on; (true); echo "traceon probe (nop tracer): tracing_on=$(cat tracing_on)"
echo '!kernel_clone:traceon' >> set_ftrace_filter
echo 'kernel_clone:snapshot:1' > set_ftrace_filter
echo 1 > tracing_on; echo before-snap > trace_marker; (true)
echo "snapshot:1 fired: snapshot has before-snap: $(grep -c before-snap snapshot), trace has before-snap: $(grep -c before-snap trace)"
show set_ftrace_filter
echo '!kernel_clone:snapshot:0' >> set_ftrace_filter
echo 0 > snapshot
echo > set_ftrace_filter; echo 1 > tracing_on; echo > trace

sec "readback with functions + cached mods + probes (seq_file position quirk)"
rd3() { echo "cat: $(cat set_ftrace_filter | tr '\n' '|')"; echo "dd bs=1: $(busybox dd if=set_ftrace_filter bs=1 2>/dev/null | tr '\n' '|')"; }
run "echo 'kernel_clone vfs_read *:mod:xfs ksys_sem*:traceoff' > set_ftrace_filter"
rd3
run "echo 'kernel_clone *:mod:xfs *:mod:ext4 ksys_shmget:traceon ksys_shmdt:traceon' > set_ftrace_filter"
rd3
run "echo '*:mod:xfs' > set_ftrace_filter"
rd3
echo '!*:traceoff' >> set_ftrace_filter; echo '!*:traceon' >> set_ftrace_filter; echo > set_ftrace_filter

sec "set_ftrace_pid / set_ftrace_notrace_pid"
run "echo 1 > set_ftrace_pid"
show set_ftrace_pid
run "echo 3 2 >> set_ftrace_pid"
show set_ftrace_pid
run "echo 7 abc 8 >> set_ftrace_pid"
show set_ftrace_pid
run "echo -- -1 > set_ftrace_pid"
show set_ftrace_pid
run "echo 4194304 > set_ftrace_pid"
show set_ftrace_pid
run "echo 10 4194304 4194305 > set_ftrace_pid"
show set_ftrace_pid
run "echo 1073741823 > set_ftrace_pid"
show set_ftrace_pid
run "echo 1073741824 > set_ftrace_pid"
show set_ftrace_pid
run "echo 4294967297 > set_ftrace_pid"
show set_ftrace_pid
run "echo 4194303 > set_ftrace_pid"
show set_ftrace_pid
run "echo 0x10 > set_ftrace_pid"
show set_ftrace_pid
run "$RW set_ftrace_pid '5' '6\n' ' 7 8 '"
show set_ftrace_pid
run "echo > set_ftrace_pid"
show set_ftrace_pid
run "echo 9 > set_ftrace_notrace_pid"
show set_ftrace_notrace_pid
run "echo > set_ftrace_notrace_pid"
show set_ftrace_notrace_pid
run "echo '!5' > set_ftrace_pid"
show set_ftrace_pid
echo > set_ftrace_pid

sec "current_tracer switching clears the buffer"
echo kernel_clone > set_ftrace_filter
echo m1 > trace_marker
echo "nop, m1 entries: $(grep -c m1 trace)"
run "echo function > current_tracer"
echo "after nop->function, m1 entries: $(grep -c m1 trace)"
echo m2 > trace_marker
run "echo function > current_tracer"
echo "after function->function, m2 entries: $(grep -c m2 trace)"
exec 4< trace_pipe
run "echo nop > current_tracer"
run "echo function > current_tracer"
exec 4<&-
run "echo nop > current_tracer"
echo "after function->nop, m2 entries: $(grep -c m2 trace)"

sec "trace_options and options/ under function"
run "echo function > current_tracer"
show trace_options
ls options | tr '\n' ' '; echo
run "echo func_stack_trace > trace_options"
show options/func_stack_trace
run "echo nofunc_stack_trace > trace_options"
show options/func_stack_trace
run "echo test_nop_accept > trace_options"


sec "function trace (one fork of the shell, filter kernel_clone)"
one
show current_tracer
echo "--- trace (raw; pid, timestamp vary)"; cat trace
echo "--- trace (normalised)"; body
show enabled_functions
[ -e touched_functions ] && echo "touched_functions has kernel_clone: $(grep -c '^kernel_clone ' touched_functions)"

sec "print-parent / sym-offset / sym-addr / raw / hex / bin / context-info"
echo 0 > options/print-parent; echo "print-parent=0:"; body
echo 1 > options/print-parent
echo 1 > options/sym-offset; echo "sym-offset=1:"; body
echo 1 > options/sym-addr; echo "sym-offset=1 sym-addr=1:"; body
echo 0 > options/sym-offset; echo "sym-addr=1:"; body
echo 0 > options/sym-addr
echo 1 > options/raw; echo "raw=1 (pid cpu ts ip parent):"; grep -v '^#' trace | sed 's/^\([0-9]*\) \([0-9]*\) [0-9]* /PID \2 TS /'; echo 0 > options/raw
echo 1 > options/hex; echo "hex=1:"; grep -v '^#' trace | od -An -c | sed -n 3,5p; echo 0 > options/hex
echo 0 > options/context-info; echo "context-info=0:"; cat trace; echo 1 > options/context-info
echo 1 > options/latency-format; echo "latency-format=1 (header + line):"; cat trace | sed -e 's/[0-9][0-9]*us/NNus/' | head -30; echo 0 > options/latency-format

sec "func_stack_trace"
echo 1 > options/func_stack_trace
one
echo "--- trace (raw)"; grep -v '^#' trace
echo "--- normalised"; body
echo 0 > options/func_stack_trace

sec "stacktrace (global option) with function"
echo 1 > options/stacktrace
one
body
echo 0 > options/stacktrace

sec "func-no-repeats (filter ksys_write kernel_clone; three builtin echo writes, a fork, the tracing_on write)"
echo 1 > options/func-no-repeats
show options/func-no-repeats
echo 'ksys_write kernel_clone' > set_ftrace_filter
echo 0 > tracing_on; echo > trace; echo 1 > tracing_on; echo x > /dev/null; echo x > /dev/null; echo x > /dev/null; (true); echo 0 > tracing_on
echo "--- raw"; grep -v '^#' trace
echo "--- normalised"; body
echo 1 > options/raw; echo "--- raw=1"; grep -v '^#' trace | sed 's/^\([0-9]*\) \([0-9]*\) [0-9]* /PID \2 TS /'; echo 0 > options/raw
echo 0 > options/func-no-repeats
echo kernel_clone > set_ftrace_filter

sec "trace_pipe"
one
{ busybox timeout 2 cat trace_pipe | norm; } 2>/dev/null
echo "trace after trace_pipe consumed it:"; grep -vc '^#' trace

sec "tracing_on / function-trace / echo > trace"
echo 0 > tracing_on; echo > trace; (true); echo "tracing_on=0: lines=$(grep -vc '^#' trace)"
echo 0 > options/function-trace; echo 1 > tracing_on; (true); echo 0 > tracing_on; echo 1 > options/function-trace
echo "function-trace=0: lines=$(grep -vc '^#' trace)"
one; echo "function-trace=1: lines=$(grep -vc '^#' trace)"
echo > trace; echo "after echo > trace: lines=$(grep -vc '^#' trace)"
one; echo 0 > tracing_on; echo 1 > tracing_on; echo 0 > tracing_on
echo "function tracer, tracing_on 0->1 after a traced fork: lines=$(grep -vc '^#' trace)"
echo 1 > tracing_on; (true); echo 1 > tracing_on; echo 0 > tracing_on
echo "function tracer, fork then tracing_on 1->1: lines=$(grep -vc '^#' trace)"
echo 'kernel_clone:traceoff' >> set_ftrace_filter
echo > trace; echo 1 > tracing_on; (true); echo "traceoff probe hit: tracing_on=$(cat tracing_on) lines=$(grep -vc '^#' trace)"
show set_ftrace_filter
echo '!kernel_clone:traceoff' >> set_ftrace_filter
echo 'kernel_clone:traceoff:1' >> set_ftrace_filter
echo 1 > tracing_on; (true); echo "traceoff:1 first hit: tracing_on=$(cat tracing_on)"; show set_ftrace_filter
echo 1 > tracing_on; (true); echo "second hit: tracing_on=$(cat tracing_on)"; echo 0 > tracing_on; show set_ftrace_filter
echo '!kernel_clone:traceoff:0' >> set_ftrace_filter
echo > trace

sec "filter and notrace while function is current (one fork, one builtin write)"
two() { echo 0 > tracing_on; echo > trace; echo 1 > tracing_on; (true); echo x > /dev/null; echo 0 > tracing_on; }
summ() { grep -v '^#' trace | sed 's/.*: //' | tr '\n' ';'; echo; }
two; echo "filter kernel_clone: $(summ)"
echo ksys_write > set_ftrace_filter
two; echo "filter ksys_write: $(summ)"
echo 'kernel_clone ksys_write' > set_ftrace_filter; echo kernel_clone > set_ftrace_notrace
two; echo "filter kernel_clone+ksys_write, notrace kernel_clone: $(summ)"
echo > set_ftrace_notrace
echo '*:mod:xfs' > set_ftrace_filter
two
echo "filter only *:mod:xfs (cached): lines=$(grep -vc '^#' trace)"
show enabled_functions
echo kernel_clone > set_ftrace_filter

sec "set_ftrace_pid effect and function-fork"
echo 1 > set_ftrace_pid
one; echo "set_ftrace_pid=1: lines=$(grep -vc '^#' trace)"
echo $$ > set_ftrace_pid
one; echo "set_ftrace_pid=self: lines=$(grep -vc '^#' trace)"
echo $$ > set_ftrace_notrace_pid
one; echo "set_ftrace_pid=self, set_ftrace_notrace_pid=self: lines=$(grep -vc '^#' trace)"
echo > set_ftrace_notrace_pid
echo > set_ftrace_pid
echo $$ > set_ftrace_notrace_pid
one; echo "set_ftrace_notrace_pid=self only: lines=$(grep -vc '^#' trace)"
echo > set_ftrace_notrace_pid
echo $$ > set_ftrace_pid
echo 1 > options/function-fork
(true)
n=0; self=no; while read -r p; do n=$((n+1)); [ "$p" = "$$" ] && self=yes; done < set_ftrace_pid
echo "function-fork=1 right after one fork: set_ftrace_pid lists self: $self, more than one pid: $([ $n -gt 1 ] && echo yes || echo no)"
echo 0 > options/function-fork
echo > set_ftrace_pid

sec "tracing_on 0->1 with nop keeps the buffer"
echo nop > current_tracer; echo 1 > tracing_on; echo > trace; echo mark > trace_marker; echo 0 > tracing_on; echo 1 > tracing_on
echo "nop, marker then tracing_on 0->1: lines=$(grep -vc '^#' trace)"
run "echo mark2 > trace_marker; echo 0 > tracing_on; echo mark3 > trace_marker"
echo 1 > tracing_on; echo > trace

sec "instance filter files"
echo nop > current_tracer
echo > set_ftrace_filter
mkdir instances/fi
show instances/fi/available_tracers
run "echo kernel_clone > instances/fi/set_ftrace_filter"
show instances/fi/set_ftrace_filter
show set_ftrace_filter
run "echo 'ksys_msgget:traceoff' >> instances/fi/set_ftrace_filter"
show instances/fi/set_ftrace_filter
show set_ftrace_filter
run "echo 5 > instances/fi/set_ftrace_pid"
show instances/fi/set_ftrace_pid
show set_ftrace_pid
run "echo function > instances/fi/current_tracer"
show instances/fi/current_tracer
echo nop > instances/fi/current_tracer
echo '!ksys_msgget:traceoff' >> instances/fi/set_ftrace_filter
rmdir instances/fi

sec "teardown"
run "echo nop > current_tracer"
echo > set_ftrace_filter
echo 1 > tracing_on
show enabled_functions
[ -e touched_functions ] && echo "touched_functions lines: $(wc -l < touched_functions)"
show events/ftrace/function/format
ls events/ftrace/function | tr '\n' ' '; echo
show events/ftrace/func_repeats/format
show trace_options
show buffer_size_kb
