#!/bin/sh
# description: synthetic events: definition and readback in synthetic_events and dynamic_events, the format file, errors with their error_log entries, removal by ! and -:, truncation
fail() { echo "FAIL: $*" >&2; exit 1; }
tab=$(printf '\t')
echo 'lat u64 delta; pid_t pid; char comm[16]' >> synthetic_events || fail "define lat"
[ "$(cat synthetic_events)" = "lat${tab}u64 delta; pid_t pid; char[16] comm" ] || fail "readback: $(cat synthetic_events)"
[ "$(cat dynamic_events)" = "s:synthetic/lat${tab}u64 delta; pid_t pid; char[16] comm" ] || fail "dynamic_events: $(cat dynamic_events)"
f=events/synthetic/lat/format
grep -q "field:u64 delta;${tab}offset:8;${tab}size:8;${tab}signed:0;" $f || fail "delta field: $(cat $f)"
grep -q "field:pid_t pid;${tab}offset:16;${tab}size:4;${tab}signed:1;" $f || fail "pid field: $(cat $f)"
grep -q "field:char comm\[\];${tab}offset:24;${tab}size:16;${tab}signed:1;" $f || fail "comm field: $(cat $f)"
grep -q '^print fmt: "delta=%llu, pid=%d, comm=%s", REC->delta, REC->pid, REC->comm$' $f || fail "print fmt: $(cat $f)"
# dynamic_events takes s: lines in the synthetic group only.
out=$( { echo 's:grp/sy2 u32 a' >> dynamic_events; } 2>&1 ) && fail "accepted a synthetic event outside the synthetic group"
case $out in *"Invalid argument"*) ;; *) fail "s:grp/: want EINVAL, got: $out" ;; esac
echo 's:sy3 u32 a; s64 b' >> dynamic_events || fail "define sy3 through dynamic_events"
out=$( { echo 'bad u65 x' >> synthetic_events; } 2>&1 ) && fail "accepted type u65"
case $out in *"Invalid argument"*) ;; *) fail "u65: want EINVAL, got: $out" ;; esac
out=$( { echo 'lat u64 x' >> synthetic_events; } 2>&1 ) && fail "defined lat twice"
case $out in *"File exists"*) ;; *) fail "lat again: want EEXIST, got: $out" ;; esac
out=$( { echo 'b3 u64' >> synthetic_events; } 2>&1 ) && fail "accepted a field without a name"
case $out in *"Invalid argument"*) ;; *) fail "b3: want EINVAL, got: $out" ;; esac
# Accepted as they are: a repeated field name, a dynamic string, a
# two-word type, a trailing ';'.
for l in 'b2 u64 a; u64 a' 'b4 char[] s; int x' 'b5 unsigned long a' 'b6 u64 a;'; do
	echo "$l" >> synthetic_events || fail "define: $l"
done
log=$(cat error_log)
exp=$(printf '%s\n' \
	'synthetic_events: error: Command must be of the form: s or -:[synthetic/]<name> field[;field] ...' \
	'  Command: s:grp/sy2 u32 a' \
	'           ^' \
	'synthetic_events: error: Invalid type' \
	'  Command: bad u65 x' \
	'               ^' \
	'synthetic_events: error: Event already exists' \
	'  Command: lat u64 x' \
	'           ^' \
	'synthetic_events: error: Command must be of the form: <name> field[;field] ...' \
	'  Command: b3 u64' \
	'           ^')
[ "$(echo "$log" | sed 's/^\[[ 0-9.]*\] //')" = "$exp" ] || fail "error_log: $log"
exp=$(printf '%s\n' "lat${tab}u64 delta; pid_t pid; char[16] comm" "sy3${tab}u32 a; s64 b" "b2${tab}u64 a; u64 a" "b4${tab}char[] s; int x" "b5${tab}unsigned long a" "b6${tab}u64 a")
[ "$(cat synthetic_events)" = "$exp" ] || fail "all: $(cat synthetic_events)"
echo '!lat' >> synthetic_events || fail "remove lat"
[ -d events/synthetic/lat ] && fail "events/synthetic/lat left after removal"
out=$( { echo '!nosuch' >> synthetic_events; } 2>&1 ) && fail "removed an unknown event"
case $out in *"No such file or directory"*) ;; *) fail "!nosuch: want ENOENT, got: $out" ;; esac
echo '-:sy3' >> dynamic_events || fail "remove sy3 through dynamic_events"
echo > synthetic_events || fail "truncate"
[ -z "$(cat dynamic_events)" ] || fail "left: $(cat dynamic_events)"
exit 0
