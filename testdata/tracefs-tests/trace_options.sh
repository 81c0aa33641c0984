#!/bin/sh
# description: trace_options and options/ agree; print-parent toggles through both; unknown options, values other than 0/1 and the nop tracer's test_nop_refuse fail with EINVAL
fail() { echo "FAIL: $*" >&2; exit 1; }
for o in print-parent markers irq-info record-cmd overwrite context-info; do
	grep -qx $o trace_options || fail "trace_options lacks $o"
	[ "$(cat options/$o)" = 1 ] || fail "options/$o: $(cat options/$o)"
done
for o in raw hex bin verbose stacktrace; do
	grep -qx no$o trace_options || fail "trace_options lacks no$o"
	[ "$(cat options/$o)" = 0 ] || fail "options/$o: $(cat options/$o)"
done
echo noprint-parent > trace_options || fail "noprint-parent"
[ "$(cat options/print-parent)" = 0 ] || fail "print-parent after no: $(cat options/print-parent)"
grep -qx noprint-parent trace_options || fail "trace_options after no"
echo 1 > options/print-parent || fail "options/print-parent 1"
grep -qx print-parent trace_options || fail "trace_options after 1"
if echo no_such_option > trace_options 2>/dev/null; then fail "unknown accepted"; fi
if echo 2 > options/print-parent 2>/dev/null; then fail "2 accepted"; fi
echo 0 > options/test_nop_accept || fail "test_nop_accept 0 (unchanged)"
echo 1 > options/test_nop_accept || fail "test_nop_accept 1"
echo 0 > options/test_nop_accept || fail "test_nop_accept back"
if echo 1 > options/test_nop_refuse 2>/dev/null; then fail "test_nop_refuse accepted"; fi
[ "$(cat options/test_nop_refuse)" = 0 ] || fail "test_nop_refuse changed"
echo 1 > options/irq-info || fail "irq-info unchanged"
exit 0
