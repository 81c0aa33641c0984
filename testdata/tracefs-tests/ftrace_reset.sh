#!/bin/sh
# description: the reset a test harness does before each case succeeds: tracing off, nop tracer, triggers and filters read, events off, pid lists and probes cleared, trace cleared, tracing on
fail() { echo "FAIL: $*" >&2; exit 1; }
echo 0 > tracing_on || fail "tracing_on 0"
echo nop > current_tracer || fail "nop tracer"
for f in events/*/*/trigger; do
	grep -q '^#' "$f" || fail "trigger $f: $(cat "$f")"
done
n=$(grep -v '^none' events/*/*/filter | wc -l)
[ "$n" = 0 ] || fail "$n filters set"
echo 0 > events/enable || fail "events off"
[ "$(cat events/enable)" = 0 ] || fail "events/enable reads $(cat events/enable)"
[ -f set_event_pid ] || fail "no set_event_pid"
echo > set_event_pid || fail "clear set_event_pid"
for f in set_ftrace_pid set_ftrace_notrace stack_trace_filter uprobe_events synthetic_events; do
	if [ -f $f ]; then echo > $f || fail "clear $f"; fi
done
echo > kprobe_events || fail "clear kprobe_events"
echo > trace || fail "clear trace"
echo 1 > tracing_on || fail "tracing_on 1"
[ "$(cat current_tracer)" = nop ] || fail "current_tracer: $(cat current_tracer)"
[ -z "$(cat set_event)" ] || fail "set_event: $(cat set_event)"
exit 0
