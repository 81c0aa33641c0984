#!/bin/sh
# description: SYM+OFF must be an instruction boundary: +0 is accepted, an offset inside the first instruction fails with EILSEQ
fail() { echo "FAIL: $*" >&2; exit 1; }
echo 'p:ib0 vfs_read+0' >> kprobe_events || fail "+0"
out=$(echo 'p:ib1 vfs_read+1' 2>&1 >> kprobe_events) && fail "+1 accepted"
case "$out" in *"Invalid or incomplete multibyte or wide character"*) ;; *) fail "+1: $out" ;; esac
[ ! -d events/kprobes/ib1 ] || fail "ib1 exists"
echo > kprobe_events
exit 0
