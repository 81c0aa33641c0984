#!/bin/sh
# description: uprobe_events takes uprobe lines only, reads back typed paths with 16-digit offsets, makes format files, logs trace_uprobe errors and truncates only uprobes
fail() { echo "FAIL: $*" >&2; exit 1; }
echo 'p:myup /bin/busybox:0x10 %ax' >> uprobe_events || fail "add uprobe"
echo 'r /bin/busybox:0x20 $retval' >> uprobe_events || fail "add uretprobe"
exp=$(printf '%s\n%s' 'p:uprobes/myup /bin/busybox:0x0000000000000010 arg1=%ax' 'r:uprobes/p_busybox_0x20 /bin/busybox:0x0000000000000020 arg1=$retval')
[ "$(cat uprobe_events)" = "$exp" ] || fail "readback: $(cat uprobe_events)"
grep -q 'field:unsigned long __probe_ip;' events/uprobes/myup/format || fail "uprobe format"
grep -q 'field:unsigned long __probe_ret_ip;' events/uprobes/p_busybox_0x20/format || fail "uretprobe format"
echo 'p:kp vfs_read' >> kprobe_events || fail "add kprobe"
out=$( { echo 'p:kp2 vfs_read' >> uprobe_events; } 2>&1 ) && fail "uprobe_events took a kprobe line"
case $out in *"Invalid argument"*) ;; *) fail "want EINVAL, got: $out" ;; esac
out=$( { echo 'p:bad /nonexistent:0x10' >> uprobe_events; } 2>&1 ) && fail "missing file accepted"
grep -q 'trace_uprobe: error: Failed to find the given file' error_log || fail "error_log: $(cat error_log)"
echo > uprobe_events || fail "truncate uprobe_events"
[ -z "$(cat uprobe_events)" ] || fail "uprobes left: $(cat uprobe_events)"
[ "$(cat dynamic_events)" = "p:kprobes/kp vfs_read" ] || fail "kprobe lost: $(cat dynamic_events)"
echo '-:kp' >> kprobe_events || fail "remove kprobe"
exit 0
