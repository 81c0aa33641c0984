#!/bin/sh
# description: buffer_size_kb rounds a size up to whole 4080-byte pages, refuses 0 and non-numbers, and buffer_total_size_kb is the sum over the CPUs
# flags: instance
fail() { echo "FAIL: $*" >&2; exit 1; }
old=$(cat buffer_size_kb)
case "$old" in
	*expanded*) ;;
	*[!0-9]*) fail "initial: $old" ;;
esac
echo 2048 > buffer_size_kb || fail "2048"
[ "$(cat buffer_size_kb)" = 2051 ] || fail "2048 reads $(cat buffer_size_kb)"
echo 1000 > buffer_size_kb || fail "1000"
[ "$(cat buffer_size_kb)" = 1000 ] || fail "1000 reads $(cat buffer_size_kb)"
if echo 0 > buffer_size_kb 2>/dev/null; then fail "0 accepted"; fi
if echo abc > buffer_size_kb 2>/dev/null; then fail "abc accepted"; fi
[ "$(cat buffer_size_kb)" = 1000 ] || fail "after failures: $(cat buffer_size_kb)"
cpus=$(( $(cat buffer_total_size_kb) / 1000 ))
[ $(( cpus * 1000 )) = "$(cat buffer_total_size_kb)" ] && [ $cpus -ge 1 ] || fail "total: $(cat buffer_total_size_kb)"
echo 1408 > buffer_size_kb || fail "1408"
[ "$(cat buffer_size_kb)" = 1410 ] || fail "1408 reads $(cat buffer_size_kb)"
exit 0
