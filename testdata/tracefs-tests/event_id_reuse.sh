#!/bin/sh
# description: a new event after a removal takes the next unused ID on kernels without fprobes in README (6.1, next_event_type++), the freed lowest ID on newer ones (6.12, IDA)
fail() { echo "FAIL: $*" >&2; exit 1; }
echo 'p:first vfs_read' >> kprobe_events || fail "add first failed"
a=$(cat events/kprobes/first/id)
echo '-:first' >> kprobe_events || fail "remove first failed"
echo 'p:second vfs_read' >> kprobe_events || fail "add second failed"
b=$(cat events/kprobes/second/id)
if grep -q 'f\[:\[<group>/\]\[<event>\]\] <func-name>' README; then
	test "$b" -eq "$a" || fail "second got ID $b, want the freed $a"
else
	test "$b" -gt "$a" || fail "second got ID $b, want one after $a"
fi
echo '-:second' >> kprobe_events || fail "remove second failed"
exit 0
