#!/bin/sh
# description: a removal may repeat the definition: -:EV followed by its place and arguments removes it only when they match (ENOENT otherwise); a bare -:EV always matches
fail() { echo "FAIL: $*" >&2; exit 1; }
echo 'p:ev1 vfs_read a=%di' >> dynamic_events || fail "ev1"
echo 'r:ev2 vfs_read' >> dynamic_events || fail "ev2"
if echo '-:ev1 vfs_write' >> dynamic_events 2>/dev/null; then fail "mismatched place removed ev1"; fi
if echo '-:ev1 vfs_read b=%si' >> dynamic_events 2>/dev/null; then fail "mismatched args removed ev1"; fi
[ -d events/kprobes/ev1 ] || fail "ev1 gone"
echo '-:ev1 vfs_read a=%di' >> dynamic_events || fail "matching removal"
[ ! -d events/kprobes/ev1 ] || fail "ev1 still there"
echo '-:kprobes/ev2' >> dynamic_events || fail "bare removal"
[ -z "$(cat dynamic_events)" ] || fail "left: $(cat dynamic_events)"
exit 0
