#!/bin/sh
# description: README announces the probe syntax features scripts test for
fail() { echo "FAIL: $*" >&2; exit 1; }
grep -q 'kprobe_events' README || fail "kprobe_events"
grep -q 'dynamic_events' README || fail "dynamic_events"
grep -q 'place: \[<module>:\]<symbol>\[+<offset>\]|<memaddr>' README || fail "place"
grep -q 'place (kretprobe): \[<module>:\]<symbol>\[+<offset>\]%return|<memaddr>' README || fail "%return"
grep -q '\$stack<index>' README || fail "stack"
grep -q 'ustring' README || fail "ustring"
grep -q 'symstr' README || fail "symstr"
grep -q '<type>\\\[<array-size>\\\]' README || fail "array"
grep -q 'error_log' README || fail "error_log"
exit 0
