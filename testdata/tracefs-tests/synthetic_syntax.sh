#!/bin/sh
# description: synthetic_events syntax: the field types and spacings accepted and how they read back (fields separated by ';' or, old style, by blanks only), a truncating write replacing every event, removal by ! with or without the fields, an event needs a field; unsigned long[] stack fields on kernels whose README shows them (6.12)
fail() { echo "FAIL: $*" >&2; echo > synthetic_events; exit 1; }
tab=$(printf '\t')
echo myevent >> synthetic_events 2>/dev/null && fail "an event without a field accepted"
echo 'myevent u64 var1' >> synthetic_events || fail "define"
[ "$(cat synthetic_events)" = "myevent${tab}u64 var1" ] || fail "readback: $(cat synthetic_events)"
echo 'myevent u64 var2' >> synthetic_events 2>/dev/null && fail "the same name twice"
echo '!myevent' >> synthetic_events || fail "removal without the fields"
echo 'myevent u64 var1' >> synthetic_events || fail "define again"
echo 'other u32 x' >> synthetic_events || fail "define other"
# A truncating write removes every synthetic event, then defines.
echo 'myevent u64 var2' > synthetic_events || fail "truncating write"
[ "$(cat synthetic_events)" = "myevent${tab}u64 var2" ] || fail "after the truncating write: $(cat synthetic_events)"
# reads DEFINITION READBACK (after the name and a tab)
reads() {
	echo "myevent $1" > synthetic_events || fail "refused: $1"
	[ "$(cat synthetic_events)" = "myevent${tab}$2" ] || fail "$1 reads back: $(cat synthetic_events)"
}
reads 'u64 var1; u64 var2;' 'u64 var1; u64 var2'
reads 'u64 var1 ; u64 var2 ;' 'u64 var1; u64 var2'
reads 'u64 var1 ;u64 var2' 'u64 var1; u64 var2'
reads ' u64  var1' 'u64 var1'
reads 'u64 lat pid_t pid char comm[16]' 'u64 lat; pid_t pid; char[16] comm'
for ty in u64 u32 u16 u8 s64 s32 s16 s8 char int long pid_t 'unsigned char' 'unsigned int' 'unsigned long'; do
	reads "$ty var" "$ty var"
done
reads 'char var[10]' 'char[10] var'
reads 'char var[]' 'char[] var'
if grep -q 'long\[\] stack' README; then
	reads 'unsigned long[] var' 'unsigned long[] var'
	reads 'u64 a; char b[]; long[] c' 'u64 a; char[] b; long[] c'
fi
# Removal with the fields: they must match the definition.
echo 'wakeup_latency u64 lat; pid_t pid; char comm[16]' > synthetic_events || fail "define wakeup_latency"
echo '!wakeup_latency u64 lat pid_t pid char comm[16]' >> synthetic_events || fail "removal with the fields"
[ -z "$(cat synthetic_events)" ] || fail "left after removal with the fields: $(cat synthetic_events)"
[ -d events/synthetic/wakeup_latency ] && fail "directory left"
echo > synthetic_events
exit 0
