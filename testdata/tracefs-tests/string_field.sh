#!/bin/sh
# description: a string argument is a __data_loc field printed with %s
fail() { echo "FAIL: $*" >&2; exit 1; }
echo 'p:myev do_sys_openat2 path=+0(%si):string' >> kprobe_events || fail "add failed"
[ "$(cat kprobe_events)" = 'p:kprobes/myev do_sys_openat2 path=+0(%si):string' ] || fail "readback: $(cat kprobe_events)"
grep -q 'field:__data_loc char\[\] path;	offset:16;	size:4;	signed:1;' events/kprobes/myev/format || fail "field: $(cat events/kprobes/myev/format)"
grep -q 'path=\\"%s\\"", REC->__probe_ip, __get_str(path)$' events/kprobes/myev/format || fail "print fmt: $(grep 'print fmt' events/kprobes/myev/format)"
exit 0
