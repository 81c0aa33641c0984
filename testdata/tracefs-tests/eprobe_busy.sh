#!/bin/sh
# description: event probes read back without their filter; one attached to a synthetic event keeps it busy, and truncating dynamic_events stops there
fail() { echo "FAIL: $*" >&2; exit 1; }
echo 'e:ep sched.sched_switch $prev_pid:s32 if prev_pid == 0' >> dynamic_events || fail "add eprobe"
[ "$(cat dynamic_events)" = 'e:eprobes/ep sched.sched_switch arg1=$prev_pid:s32' ] || fail "readback: $(cat dynamic_events)"
grep -q 'field:s32 arg1;	offset:8;' events/eprobes/ep/format || fail "format: $(cat events/eprobes/ep/format)"
echo 'syn u64 a' >> synthetic_events || fail "add synthetic event"
echo 'e:ep2 synthetic.syn $a' >> dynamic_events || fail "add eprobe on the synthetic event"
out=$( { echo '!syn' >> synthetic_events; } 2>&1 ) && fail "removed an attached synthetic event"
case $out in *"Device or resource busy"*) ;; *) fail "want EBUSY, got: $out" ;; esac
out=$( { echo > dynamic_events; } 2>&1 ) && fail "truncated with an attached synthetic event"
case $out in *"Device or resource busy"*) ;; *) fail "want EBUSY, got: $out" ;; esac
exp=$(printf 's:synthetic/syn\tu64 a\ne:eprobes/ep2 synthetic.syn arg1=$a')
[ "$(cat dynamic_events)" = "$exp" ] || fail "after truncation: $(cat dynamic_events)"
echo '-:ep2' >> dynamic_events || fail "remove eprobe"
echo > dynamic_events || fail "truncate"
[ -z "$(cat dynamic_events)" ] || fail "left: $(cat dynamic_events)"
exit 0
