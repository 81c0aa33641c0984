#!/bin/sh
# description: fetch arguments read back named argN when unnamed, with their forms kept: stack slots, memory dereferences, registers, types, $comm, symbols and bitfields
fail() { echo "FAIL: $*" >&2; exit 1; }
echo 'p:tp vfs_read $stack $stack0 +0($stack)' > kprobe_events || fail "stack args"
grep -q 'arg1=\$stack arg2=\$stack0 arg3=+0(\$stack)' kprobe_events || fail "readback: $(cat kprobe_events)"
echo 'p:tp2 vfs_read a=%di:u8 b=%si:s16 c=%dx:x32 d=%cx:x64 e=%r8:u64' >> kprobe_events || fail "types"
grep -q 'a=%di:u8 b=%si:s16 c=%dx:x32 d=%cx:x64 e=%r8:u64' kprobe_events || fail "types readback: $(cat kprobe_events)"
echo 'p:tp3 vfs_read c=$comm s=+0(%si):string bf=+0(%di):b3@4/32' >> kprobe_events || fail "comm/string/bitfield"
grep -q 'c=\$comm s=+0(%si):string bf=+0(%di):b3@4/32' kprobe_events || fail "readback: $(cat kprobe_events)"
echo 'p:tp4 vfs_read j=@jiffies jo=@jiffies+8' >> kprobe_events || fail "symbols"
grep -q 'j=@jiffies jo=@jiffies+8' kprobe_events || fail "symbols readback: $(cat kprobe_events)"
grep -q 'field:u8 a;' events/kprobes/tp2/format || fail "u8 field"
grep -q 'field:__data_loc char\[\] s;' events/kprobes/tp3/format || fail "string field"
if echo 'p:bad vfs_read x=%di:u128' >> kprobe_events 2>/dev/null; then fail "u128 accepted"; fi
if echo 'p:bad vfs_read x=+0(%di' >> kprobe_events 2>/dev/null; then fail "unclosed accepted"; fi
[ "$(grep -c . kprobe_events)" = 4 ] || fail "count: $(cat kprobe_events)"
echo > kprobe_events
exit 0
