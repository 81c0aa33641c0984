#!/bin/sh
# description: current_tracer reads nop and takes nop (blanks stripped); an unknown tracer or an empty write fails with EINVAL and changes nothing
# flags: instance
fail() { echo "FAIL: $*" >&2; exit 1; }
[ "$(cat current_tracer)" = nop ] || fail "initial: $(cat current_tracer)"
grep -qw nop available_tracers || fail "available_tracers: $(cat available_tracers)"
echo nop > current_tracer || fail "nop"
echo ' nop ' > current_tracer || fail "' nop '"
printf nop > current_tracer || fail "printf nop"
if echo no_such_tracer > current_tracer 2>/dev/null; then fail "unknown tracer accepted"; fi
[ "$(cat current_tracer)" = nop ] || fail "after unknown: $(cat current_tracer)"
if echo > current_tracer 2>/dev/null; then fail "empty write accepted"; fi
for t in $(cat available_tracers); do
	[ "$t" = nop ] && continue
	# A tracer the system lists is accepted; put nop back.
	echo $t > current_tracer || fail "listed tracer $t refused"
	echo nop > current_tracer || fail "back to nop"
	break
done
[ "$(cat current_tracer)" = nop ] || fail "end: $(cat current_tracer)"
exit 0
