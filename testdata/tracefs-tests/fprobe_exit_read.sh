#!/bin/sh
# description: an fprobe exit on vfs_read records every return of a task's reads, with the fprobe exit's preempt depth of 1, while other tasks sleep in read(2)
grep -q 'f\[:\[<group>/\]\[<event>\]\] <func-name>' README || exit 0
cleanup() {
	echo 0 > events/enable
	echo > dynamic_events
}
fail() { echo "FAIL: $*" >&2; cleanup; exit 1; }
echo 'f:fx/r vfs_read%return ret=$retval' >> dynamic_events || fail "fprobe exit"
echo 'p:fx/k ksys_read' >> dynamic_events || fail "kprobe"
echo > trace
echo 1 > events/fx/enable
dd if=/proc/version of=/dev/null bs=16 count=4 2>/dev/null
echo 0 > events/fx/enable
# Hits need a running kernel: the kprobe's tell.
grep -q ' dd-[0-9]* .* k: ' trace || { cleanup; exit 0; }
n=$(grep -c ' dd-[0-9]* .* r: (.* <- vfs_read) ret=16$' trace)
[ "$n" = 4 ] || fail "$n of dd's 4 reads of 16 bytes returned through the fprobe exit: $(grep ' r: ' trace | head -20)"
for f in $(grep ' dd-[0-9]* .* r: ' trace | sed 's/^.*\] \([^ ]*\) .*/\1/'); do
	case $f in ?[.Nnp].1?) ;; *) fail "dd's fprobe exit record reads $f" ;; esac
done
cleanup
