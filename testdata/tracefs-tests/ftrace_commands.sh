#!/bin/sh
# description: function commands in set_ftrace_filter (FUNC:traceoff, :traceon, :stacktrace, :snapshot, :enable_event:SYS:EV, with or without a count) read back as FUNC:CMD:unlimited or :count=N, newest kind first; the same command twice fails with EINVAL; a truncating write keeps them; !FUNC:CMD[:N] removes the kind named (ENODEV when there is none)
fail() { echo "FAIL: $*" >&2; echo '!*:traceoff' >> set_ftrace_filter; echo '!*:traceoff:0' >> set_ftrace_filter; echo '!*:traceon:0' >> set_ftrace_filter; echo '!*:enable_event:sched:sched_switch:0' >> set_ftrace_filter; echo > set_ftrace_filter; exit 1; } 2>/dev/null
[ -f set_ftrace_filter ] || exit 0
F=ksys_msgget
all='#### all functions enabled ####'
echo "$F:traceoff" > set_ftrace_filter || fail "traceoff"
[ "$(cat set_ftrace_filter | tr '\n' '|')" = "$all|$F:traceoff:unlimited|" ] || fail "readback: $(cat set_ftrace_filter | tr '\n' '|')"
if echo "$F:traceoff" >> set_ftrace_filter 2>/dev/null; then fail "the same command twice accepted"; fi
echo "$F:traceoff:5" >> set_ftrace_filter || fail "traceoff:5"
echo "$F:traceon:0x10" >> set_ftrace_filter || fail "traceon:0x10"
echo "$F:enable_event:sched:sched_switch:2" >> set_ftrace_filter || fail "enable_event"
[ "$(cat events/sched/sched_switch/enable)" = "0*" ] || fail "enable_event's event not in soft mode: $(cat events/sched/sched_switch/enable)"
want="$all|$F:enable_event:sched:sched_switch:count=2|$F:traceon:count=16|$F:traceoff:count=5|$F:traceoff:unlimited|"
[ "$(cat set_ftrace_filter | tr '\n' '|')" = "$want" ] || fail "readback: $(cat set_ftrace_filter | tr '\n' '|')"
echo kernel_clone > set_ftrace_filter || fail "kernel_clone"
[ "$(cat set_ftrace_filter | tr '\n' '|')" = "kernel_clone|${want#$all|}" ] || fail "a truncating write dropped commands: $(cat set_ftrace_filter | tr '\n' '|')"
if echo "$F:traceoff:abc" >> set_ftrace_filter 2>/dev/null; then fail "a bad count accepted"; fi
if echo "$F:enable_event:sched:no_such_event" >> set_ftrace_filter 2>/dev/null; then fail "an unknown event accepted"; fi
if echo "$F:no_such_command" >> set_ftrace_filter 2>/dev/null; then fail "an unknown command accepted"; fi
echo "!$F:traceoff" >> set_ftrace_filter || fail "!traceoff"
err=$(echo "!$F:traceoff" 2>&1 >> set_ftrace_filter)
case $err in *"No such device"*) ;; *) fail "removing a kind that is gone: '$err'" ;; esac
echo "!$F:traceoff:0" >> set_ftrace_filter || fail "!traceoff:0"
echo "!$F:traceon:" >> set_ftrace_filter || fail "!traceon:"
echo "!$F:enable_event:sched:sched_switch:1" >> set_ftrace_filter || fail "!enable_event"
[ "$(cat set_ftrace_filter)" = kernel_clone ] || fail "after the removals: $(cat set_ftrace_filter | tr '\n' '|')"
[ "$(cat events/sched/sched_switch/enable)" = "0" ] || fail "soft mode kept: $(cat events/sched/sched_switch/enable)"
echo > set_ftrace_filter
exit 0
