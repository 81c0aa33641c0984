#!/bin/sh
# description: the format file lists the probe's fields with offsets, sizes and print fmt
fail() { echo "FAIL: $*" >&2; exit 1; }
echo 'p:myev vfs_read a=%di:u32 b=%si:s64 c=%dx:x16' >> kprobe_events || fail "add failed"
f=events/kprobes/myev/format
grep -q '^name: myev$' $f || fail "name"
grep -q '^ID: [0-9][0-9]*$' $f || fail "ID"
grep -q 'field:unsigned long __probe_ip;	offset:8;	size:8;	signed:0;' $f || fail "__probe_ip: $(cat $f)"
grep -q 'field:u32 a;	offset:16;	size:4;	signed:0;' $f || fail "a: $(cat $f)"
grep -q 'field:s64 b;	offset:20;	size:8;	signed:1;' $f || fail "b: $(cat $f)"
grep -q 'field:u16 c;	offset:28;	size:2;	signed:0;' $f || fail "c: $(cat $f)"
grep -q '^print fmt: "(%lx) a=%u b=%Ld c=0x%x", REC->__probe_ip, REC->a, REC->b, REC->c$' $f || fail "print fmt: $(grep 'print fmt' $f)"
exit 0
