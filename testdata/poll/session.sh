# poll(2) on tracefs files, as a waiting reader sees it: run with the
# tracefs directory as working directory and the workload's poll mode at
# /bin/workload. Each step prints its name, the revents poll(2) reported
# and poll's exit status (1: timed out). The kernel's output is the
# golden; a ktrace mount must print the same lines.
W=/bin/workload
step() { n=$1; shift; echo "== $n"; "$@"; echo "rc=$?"; }
echo 'p:kp/s ksys_sync' >> kprobe_events
step "kprobe_events" $W poll -IP -t 300 kprobe_events
step "format" $W poll -I -t 300 events/kp/s/format
step "trace_pipe, empty, nothing enabled" $W poll -I -t 300 trace_pipe
echo 1 > events/kp/s/enable
step "trace_pipe, empty" $W poll -I -t 300 trace_pipe
sync
step "trace_pipe after a hit" $W poll -I -t 3000 trace_pipe
step "trace_pipe after a hit, POLLPRI" $W poll -P -t 300 trace_pipe
cat trace_pipe > /dev/null & sleep 1; kill $!; wait
step "trace_pipe after consuming" $W poll -I -t 300 trace_pipe
( sleep 0.5; sync ) &
step "trace_pipe, hit while waiting" $W poll -I -t 5000 trace_pipe
wait
cat trace_pipe > /dev/null & sleep 1; kill $!; wait
echo 0 > tracing_on
( sleep 0.5; sync ) &
step "trace_pipe, tracing off, hit while waiting" $W poll -I -t 1500 trace_pipe
wait
echo 1 > tracing_on
echo 0 > events/kp/s/enable
echo 'hist:keys=common_pid' > events/kp/s/trigger
step "hist, no hit" $W poll -IP -t 300 events/kp/s/hist
sync
step "hist after a hit" $W poll -I -t 300 events/kp/s/hist
step "hist after a hit, POLLPRI" $W poll -P -t 300 events/kp/s/hist
step "hist after a hit, read first" $W poll -r -IP -t 300 events/kp/s/hist
( sleep 0.5; sync ) &
step "hist, hit while waiting" $W poll -IP -t 5000 events/kp/s/hist
wait
( sleep 0.5; sync ) &
step "hist, read first, hit while waiting" $W poll -r -IP -t 5000 events/kp/s/hist
wait
( sleep 0.5; sync ) &
step "hist, read first, hit while waiting, POLLPRI" $W poll -r -P -t 5000 events/kp/s/hist
wait
echo 'hist:keys=common_pid if common_pid == 1' >> events/kp/s/trigger
( sleep 0.5; sync ) &
step "hist, a second trigger filters the hit out, POLLPRI" $W poll -P -t 5000 events/kp/s/hist
wait
echo '!hist:keys=common_pid if common_pid == 1' >> events/kp/s/trigger
echo '!hist:keys=common_pid' >> events/kp/s/trigger
step "hist, triggers removed" $W poll -I -t 300 events/kp/s/hist
echo '-:kp/s' >> kprobe_events
E=events/sched/sched_process_free
echo 'hist:key=comm if comm == "sleep"' > $E/trigger
echo 1 > $E/enable
sleep 1 &
step "static hist, a sleep ends while waiting" $W poll -r -I -t 5000 $E/hist
wait
sleep 1 &
step "static hist, a sleep ends while waiting, POLLPRI" $W poll -P -t 5000 $E/hist
wait
echo 0 > $E/enable
echo '!hist:key=comm if comm == "sleep"' > $E/trigger
