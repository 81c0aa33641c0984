#!/bin/sh
# description: a probe without a name is named after its kind, symbol and offset (p_SYM_OFF, r_SYM_OFF) in the kprobes group; a name or GROUP/NAME replaces that
fail() { echo "FAIL: $*" >&2; exit 1; }
echo 'p vfs_read' > kprobe_events || fail "p vfs_read"
[ -d events/kprobes/p_vfs_read_0 ] || fail "p: $(ls events/kprobes)"
grep -qx 'p:kprobes/p_vfs_read_0 vfs_read' kprobe_events || fail "readback: $(cat kprobe_events)"
echo 'r vfs_read' >> kprobe_events || fail "r vfs_read"
[ -d events/kprobes/r_vfs_read_0 ] || fail "r: $(ls events/kprobes)"
echo 'p vfs_read+4' >> kprobe_events 2>/dev/null && { [ -d events/kprobes/p_vfs_read_4 ] || fail "offset name: $(ls events/kprobes)"; }
echo 'p:kprobes2/named vfs_read' > kprobe_events || fail "group/name"
[ -d events/kprobes2/named ] && [ ! -d events/kprobes ] || fail "after >: $(ls events)"
echo > kprobe_events
exit 0
