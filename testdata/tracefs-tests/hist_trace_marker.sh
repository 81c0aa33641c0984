#!/bin/sh
# description: triggers on trace_marker writes (events/ftrace/print): a hist counts each write, snapshot swaps the buffers at each write, traceoff:1 stops tracing (the next write fails, EBADF), and a latency between a "start" and an "end" write goes into a synthetic event
p=events/ftrace/print
fail() { echo "FAIL: $*" >&2; echo 1 > tracing_on; { echo > $p/trigger; for c in snapshot traceoff; do echo "!$c" >> $p/trigger; done; echo > events/synthetic/latency/trigger; echo > synthetic_events; } 2>/dev/null; echo local > trace_clock; exit 1; }
# Hits need a running kernel: ktrace --kernel SNAPSHOT emulates the
# files and records no event (nor shows it events/ftrace), so this
# script checks nothing there.
echo > trace
echo 1 > events/syscalls/sys_enter_sync/enable
sync
grep -q 'sys_sync()' trace; seen=$?
echo 0 > events/syscalls/sys_enter_sync/enable
[ $seen = 0 ] || exit 0
[ "$(ls $p | tr '\n' ' ')" = "format hist id trigger " ] || fail "$p holds: $(ls $p)"
echo 'hist:keys=common_pid' >> $p/trigger || fail "hist"
for i in 1 2 3 4 5 6 7 8 9 10; do echo hello > trace_marker; done
grep -q '^{ common_pid: *[0-9]* } hitcount: *10$' $p/hist || fail "10 writes: $(cat $p/hist)"
echo '!hist:keys=common_pid' >> $p/trigger || fail "remove hist"
# snapshot swaps before each write is committed: the first and the third
# write end in the snapshot, the second in the trace.
echo 0 > snapshot
echo > trace
echo snapshot >> $p/trigger || fail "snapshot"
for i in 1 2 3; do echo "hello $i" > trace_marker; done
[ "$(grep -c 'tracing_mark_write: hello' trace)" = 1 ] || fail "trace: $(cat trace)"
grep -q 'tracing_mark_write: hello 2$' trace || fail "trace: $(cat trace)"
[ "$(grep -c 'tracing_mark_write: hello [13]$' snapshot)" = 2 ] || fail "snapshot: $(cat snapshot)"
echo '!snapshot' >> $p/trigger || fail "remove snapshot"
echo 0 > snapshot
echo 'traceoff:1' >> $p/trigger || fail "traceoff"
echo m1 > trace_marker || fail "the first write"
[ "$(cat tracing_on)" = 0 ] || fail "traceoff did not stop tracing"
out=$( { echo m2 > trace_marker; } 2>&1 ) && fail "a write with tracing off accepted"
case $out in *"Bad file descriptor"*) ;; *) fail "with tracing off: want EBADF, got: $out" ;; esac
[ "$(cat $p/trigger)" = "traceoff:count=0" ] || fail "count: $(cat $p/trigger)"
echo 1 > tracing_on
echo '!traceoff' >> $p/trigger || fail "remove traceoff"
# A latency between two marker writes.
echo 'latency u64 lat' >> synthetic_events || fail "define latency"
s='hist:keys=common_pid:ts0=common_timestamp.usecs if buf == "start"'
e='hist:keys=common_pid:lat=common_timestamp.usecs-$ts0:onmatch(ftrace.print).latency($lat) if buf == "end"'
echo "$s" >> $p/trigger || fail "start"
echo "$e" >> $p/trigger || fail "end"
echo 'hist:keys=common_pid,lat:sort=lat' >> events/synthetic/latency/trigger || fail "latency hist"
echo -n start > trace_marker
echo -n end > trace_marker
[ "$(grep -c '^{ common_pid: *[0-9]* } hitcount: *1$' $p/hist)" = 2 ] || fail "print hists: $(cat $p/hist)"
grep -q '^{ common_pid: *[0-9]*, lat: *[0-9]* } hitcount: *1$' events/synthetic/latency/hist || fail "latency hist: $(cat events/synthetic/latency/hist)"
echo '!hist:keys=common_pid,lat:sort=lat' >> events/synthetic/latency/trigger || fail "remove latency hist"
echo "!$e" >> $p/trigger || fail "remove end"
echo "!$s" >> $p/trigger || fail "remove start"
echo '!latency' >> synthetic_events || fail "remove latency"
echo > trace
# A hist trigger with a timestamp set the trace clock to global (its
# clock=), and its removal left it so: back to local.
echo local > trace_clock
exit 0
