#!/bin/sh
# description: every clock trace_clock lists can be chosen; a change (even to the same clock) empties the buffer; counter, uptime and x86-tsc stamp entries with an integer count (counter increasing by entry), the others with seconds and microseconds
# flags: instance
fail() { echo "FAIL: $*" >&2; echo local > trace_clock; exit 1; }
for c in $(cat trace_clock | tr -d '[]'); do
	echo $c > trace_clock || fail "$c refused"
	grep -q "\[$c\]" trace_clock || fail "after $c: $(cat trace_clock)"
done
echo local > trace_clock
echo > trace
echo kept > trace_marker || fail "marker"
echo local > trace_clock
grep -q 'tracing_mark_write: kept' trace && fail "the same clock kept the buffer"
# stamp TEXT: the time of the marker entry TEXT
stamp() { grep "tracing_mark_write: $1\$" trace | sed 's/: tracing_mark_write: .*//' | awk '{ print $NF }'; }
for c in counter uptime x86-tsc mono_raw boot tai mono; do
	echo $c > trace_clock || fail "$c refused"
	echo first > trace_marker; echo second > trace_marker
	a=$(stamp first); b=$(stamp second)
	case $c in
	counter|uptime|x86-tsc)
		case "$a$b" in *.*) fail "$c: not a count: $a $b";; esac
		[ -n "$a" ] && [ "$b" -ge "$a" ] || fail "$c: $a then $b" ;;
	*)
		case "$a" in *.??????) ;; *) fail "$c: not seconds.microseconds: $a";; esac ;;
	esac
	[ $c != counter ] || [ "$b" -gt "$a" ] || fail "counter did not count: $a then $b"
done
echo local > trace_clock
exit 0
