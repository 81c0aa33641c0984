#!/bin/sh
# description: a kretprobe with $retval reads back with the default argument name
fail() { echo "FAIL: $*" >&2; exit 1; }
echo 'r:myret vfs_read $retval' >> kprobe_events || fail "add failed"
# Without r<N>, the default maxactive (max(10, 2*CPUs)) is shown.
grep -q '^r[0-9][0-9]*:kprobes/myret vfs_read arg1=\$retval$' kprobe_events || fail "readback: $(cat kprobe_events)"
grep -q 'field:unsigned long __probe_func;' events/kprobes/myret/format || fail "no __probe_func field"
grep -q 'field:unsigned long __probe_ret_ip;' events/kprobes/myret/format || fail "no __probe_ret_ip field"
echo '-:myret' >> kprobe_events || fail "remove failed"
exit 0
