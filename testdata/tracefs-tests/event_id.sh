#!/bin/sh
# description: events/GROUP/EVENT/id is the ID of the format file
fail() { echo "FAIL: $*" >&2; exit 1; }
echo 'p:myev vfs_read' >> kprobe_events || fail "add failed"
id=$(cat events/kprobes/myev/id)
case $id in ''|*[!0-9]*) fail "id not a number: $id" ;; esac
grep -q "^ID: $id\$" events/kprobes/myev/format || fail "format ID differs from id $id"
exit 0
