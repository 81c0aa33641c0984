#!/bin/sh
# description: tracing_on reads 1 by default and follows writes of 0 and 1
# flags: instance
fail() { echo "FAIL: $*" >&2; exit 1; }
[ "$(cat tracing_on)" = 1 ] || fail "default: $(cat tracing_on)"
echo 0 > tracing_on || fail "write 0"
[ "$(cat tracing_on)" = 0 ] || fail "after 0: $(cat tracing_on)"
echo 1 > tracing_on || fail "write 1"
[ "$(cat tracing_on)" = 1 ] || fail "after 1: $(cat tracing_on)"
exit 0
