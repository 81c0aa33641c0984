#!/bin/sh
# description: trace_clock lists the clocks with the current one in brackets (local by default); mono can be chosen; an unknown clock fails with EINVAL
# flags: instance
fail() { echo "FAIL: $*" >&2; exit 1; }
grep -q '^\[local\] global ' trace_clock || fail "initial: $(cat trace_clock)"
echo mono > trace_clock || fail "mono"
grep -q ' \[mono\] ' trace_clock || fail "after mono: $(cat trace_clock)"
if echo no_such_clock > trace_clock 2>/dev/null; then fail "unknown accepted"; fi
grep -q ' \[mono\] ' trace_clock || fail "after unknown: $(cat trace_clock)"
echo 'local ' > trace_clock || fail "local"
grep -q '^\[local\] ' trace_clock || fail "end: $(cat trace_clock)"
exit 0
