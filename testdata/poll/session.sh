# poll(2) on tracefs files, as a waiting reader sees it: run with the
# tracefs directory as working directory and internal/vmtest/poll at
# /bin/poll. Each step prints its name, the revents poll(2) reported
# and poll's exit status (1: timed out). The kernel's output is the
# golden; a ktrace mount must print the same lines.
P=/bin/poll
step() { n=$1; shift; echo "== $n"; "$@"; echo "rc=$?"; }
echo 'p:kp/s ksys_sync' >> kprobe_events
step "kprobe_events" $P -IP -t 300 kprobe_events
step "format" $P -I -t 300 events/kp/s/format
step "trace_pipe, empty, nothing enabled" $P -I -t 300 trace_pipe
echo 1 > events/kp/s/enable
step "trace_pipe, empty" $P -I -t 300 trace_pipe
sync
step "trace_pipe after a hit" $P -I -t 3000 trace_pipe
step "trace_pipe after a hit, POLLPRI" $P -P -t 300 trace_pipe
cat trace_pipe > /dev/null & sleep 1; kill $!; wait
step "trace_pipe after consuming" $P -I -t 300 trace_pipe
( sleep 0.5; sync ) &
step "trace_pipe, hit while waiting" $P -I -t 5000 trace_pipe
wait
cat trace_pipe > /dev/null & sleep 1; kill $!; wait
echo 0 > tracing_on
( sleep 0.5; sync ) &
step "trace_pipe, tracing off, hit while waiting" $P -I -t 1500 trace_pipe
wait
echo 1 > tracing_on
echo 0 > events/kp/s/enable
echo 'hist:keys=common_pid' > events/kp/s/trigger
step "hist, no hit" $P -IP -t 300 events/kp/s/hist
sync
step "hist after a hit" $P -I -t 300 events/kp/s/hist
step "hist after a hit, POLLPRI" $P -P -t 300 events/kp/s/hist
step "hist after a hit, read first" $P -r -IP -t 300 events/kp/s/hist
( sleep 0.5; sync ) &
step "hist, hit while waiting" $P -IP -t 5000 events/kp/s/hist
wait
( sleep 0.5; sync ) &
step "hist, read first, hit while waiting" $P -r -IP -t 5000 events/kp/s/hist
wait
( sleep 0.5; sync ) &
step "hist, read first, hit while waiting, POLLPRI" $P -r -P -t 5000 events/kp/s/hist
wait
echo 'hist:keys=common_pid if common_pid == 1' >> events/kp/s/trigger
( sleep 0.5; sync ) &
step "hist, a second trigger filters the hit out, POLLPRI" $P -P -t 5000 events/kp/s/hist
wait
echo '!hist:keys=common_pid if common_pid == 1' >> events/kp/s/trigger
echo '!hist:keys=common_pid' >> events/kp/s/trigger
step "hist, triggers removed" $P -I -t 300 events/kp/s/hist
echo '-:kp/s' >> kprobe_events
E=events/sched/sched_process_free
echo 'hist:key=comm if comm == "sleep"' > $E/trigger
echo 1 > $E/enable
sleep 1 &
step "static hist, a sleep ends while waiting" $P -r -I -t 5000 $E/hist
wait
sleep 1 &
step "static hist, a sleep ends while waiting, POLLPRI" $P -P -t 5000 $E/hist
wait
echo 0 > $E/enable
echo '!hist:key=comm if comm == "sleep"' > $E/trigger
