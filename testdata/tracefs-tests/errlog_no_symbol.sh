#!/bin/sh
# description: probing a symbol that does not exist fails and is logged
fail() { echo "FAIL: $*" >&2; exit 1; }
echo > error_log
out=$( { echo 'p:myev ktrace_no_such_function_xyz' >> kprobe_events; } 2>&1 ) && fail "accepted"
# 6.1 fails the write with ENOENT, 6.12 (whose README lists fprobes) with EINVAL.
want="No such file or directory"
grep -q 'f\[:\[<group>/\]\[<event>\]\]' README && want="Invalid argument"
case $out in *"$want"*) ;; *) fail "want $want, got: $out" ;; esac
grep -q 'trace_kprobe: error: Invalid probed address or symbol$' error_log || fail "message: $(cat error_log)"
grep -q '^  Command: p:myev ktrace_no_such_function_xyz$' error_log || fail "command: $(cat error_log)"
[ "$(tail -n 1 error_log)" = "                  ^" ] || fail "caret: $(tail -n 1 error_log)"
exit 0
