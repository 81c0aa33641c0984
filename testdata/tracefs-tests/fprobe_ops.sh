#!/bin/sh
# description: on kernels with fprobe events, defining one (enabled or not) gives its function a second ftrace user, so a kprobe's records at that function read one preemption level deeper ("...1."), and removing it takes the level away again
grep -q 'f\[:\[<group>/\]\[<event>\]\] <func-name>' README || exit 0
cleanup() {
	echo 0 > events/enable
	echo > dynamic_events
}
fail() { echo "FAIL: $*" >&2; cleanup; exit 1; }
echo 'p:ops/k ksys_read' >> dynamic_events || fail "kprobe"
# depth WANT: dd's kprobe records read preempt depth WANT.
depth() {
	echo > trace
	echo 1 > events/ops/k/enable
	dd if=/proc/version of=/dev/null 2>/dev/null
	echo 0 > events/ops/k/enable
	lines=$(grep ' dd-[0-9]* .* k: ' trace)
	# Hits need a running kernel.
	[ -n "$lines" ] || { cleanup; exit 0; }
	for f in $(echo "$lines" | sed 's/^.*\] \([^ ]*\) .*/\1/'); do
		case $f in ?[.Nnp].$1?) ;; *) fail "$2: dd's kprobe record reads $f, want depth $1: $lines" ;; esac
	done
}
depth . "alone"
echo 'f:ops/f ksys_read' >> dynamic_events || fail "fprobe"
depth 1 "with an fprobe defined on its function"
echo 'f:ops/fr ksys_read%return' >> dynamic_events || fail "fprobe exit"
echo '-:ops/f' >> dynamic_events || fail "fprobe not removed"
depth 1 "with an fprobe exit defined on its function"
echo '-:ops/fr' >> dynamic_events || fail "fprobe exit not removed"
depth . "after the fprobes were removed"
cleanup
