#!/bin/sh
# description: a trace_marker write appears in trace as tracing_mark_write; with tracing off the write fails, with the markers option off too
# flags: instance
fail() { echo "FAIL: $*" >&2; exit 1; }
echo > trace
echo hello marker > trace_marker || fail "write"
grep -q ': tracing_mark_write: hello marker$' trace || fail "trace: $(cat trace)"
echo 0 > tracing_on
if echo off > trace_marker 2>/dev/null; then echo 1 > tracing_on; fail "write with tracing off accepted"; fi
echo 1 > tracing_on
grep -q 'tracing_mark_write: off' trace && fail "recorded while off"
echo 0 > options/markers || fail "markers 0"
if echo nomark > trace_marker 2>/dev/null; then echo 1 > options/markers; fail "write with markers off accepted"; fi
echo 1 > options/markers || fail "markers 1"
echo > trace
exit 0
