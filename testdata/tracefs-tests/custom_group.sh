#!/bin/sh
# description: GROUP/EVENT names make events/GROUP, removed with -:GROUP/EVENT
fail() { echo "FAIL: $*" >&2; exit 1; }
echo 'p:mygrp/myev vfs_write' >> kprobe_events || fail "add failed"
[ "$(cat kprobe_events)" = "p:mygrp/myev vfs_write" ] || fail "readback: $(cat kprobe_events)"
[ -d events/mygrp ] || fail "no events/mygrp"
grep -q '^name: myev$' events/mygrp/myev/format || fail "format name"
[ -f events/mygrp/enable ] || fail "no group enable file"
echo '-:mygrp/myev' >> kprobe_events || fail "remove failed"
[ ! -d events/mygrp ] || fail "group dir survived"
exit 0
