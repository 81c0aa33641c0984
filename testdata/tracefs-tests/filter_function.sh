#!/bin/sh
# description: the .function filter modifier (kernels whose README lists nohitcount, 6.12): a field compared with a function name or address passes the hits whose value lies in that function; unknown names and other operators are refused. 6.1 refuses the modifier
fail() { echo "FAIL: $*" >&2; echo 0 > $f; echo 0 > events/kmem/kmem_cache_free/enable; exit 1; }
f=events/kmem/kmem_cache_free/filter
pad() { n=$1 s=; while [ "$n" -gt 0 ]; do s="$s "; n=$((n - 1)); done; printf '%s' "$s"; }
# bad FILTER CARET-COLUMN MESSAGE
bad() {
	out=$( { echo "$1" > $f; } 2>&1 ) && fail "accepted: $1"
	case $out in *"Invalid argument"*) ;; *) fail "$1: want EINVAL, got: $out" ;; esac
	exp="$1
$(pad $2)^
parse_error: $3"
	[ "$(cat $f)" = "$exp" ] || fail "filter file after $1: $(cat $f)"
}
if ! grep -q nohitcount README; then
	bad 'call_site.function == kfree' 10 'Invalid operator'
	echo 0 > $f
	exit 0
fi
echo 'call_site.function == kfree' > $f || fail "refused a function name"
[ "$(cat $f)" = 'call_site.function == kfree' ] || fail "readback: $(cat $f)"
echo 'call_site.function != kfree' > $f || fail "refused !="
bad 'call_site.function == nosuch_function_name' 42 'Function not found'
bad 'call_site.function > kfree' 22 'Invalid operator'
echo 0 > $f
# Hits need a running kernel: ktrace --kernel SNAPSHOT emulates the
# files and records no event, so the checks end here there.
echo > trace
echo 1 > events/syscalls/sys_enter_sync/enable
sync
grep -q 'sys_sync()' trace; seen=$?
echo 0 > events/syscalls/sys_enter_sync/enable
[ $seen = 0 ] || exit 0
sample() {
	echo > trace
	echo 1 > events/kmem/kmem_cache_free/enable
	dd if=/dev/zero of=/dev/null count=1 2>/dev/null
	echo 0 > events/kmem/kmem_cache_free/enable
}
sample
fn=$(cat trace | sed -n 's/.*call_site=\([^+ ]*\)+.*/\1/p' | sort | uniq -c | sort -n | tail -1 | sed 's/^ *[0-9]* //')
[ -n "$fn" ] || fail "no call site in the sample: $(tail -3 trace)"
check() {
	echo "$1" > $f || fail "refused: $1"
	n=0
	while :; do
		sample
		grep -q 'kmem_cache_free: ' trace && break
		n=$((n + 1))
		[ $n -lt 10 ] || fail "no hit of $fn under $1"
	done
	grep 'kmem_cache_free: ' trace | grep -v "call_site=$fn+" && fail "hits from elsewhere passed $1"
	:
}
check "call_site.function == $fn"
addr=$(grep " $fn\$" /proc/kallsyms | head -1 | cut -d' ' -f1)
[ -n "$addr" ] || fail "$fn not in /proc/kallsyms"
check "call_site.function == 0x$addr"
echo 0 > $f
echo > trace
exit 0
