#!/bin/sh
# description: synthetic_events syntax errors: each refused definition's error_log entry (invalid and incomplete types, illegal names, invalid fields and array sizes, a malformed command) with its caret, and dynamic_events' s: form outside the synthetic group
fail() { echo "FAIL: $*" >&2; echo > synthetic_events; exit 1; }
pad() { n=$1 s=; while [ "$n" -gt 0 ]; do s="$s "; n=$((n - 1)); done; printf '%s' "$s"; }
# bad DEFINITION CARET-COLUMN MESSAGE [FILE]
bad() {
	echo > error_log
	out=$( { echo "$1" >> ${4:-synthetic_events}; } 2>&1 ) && fail "accepted: $1"
	case $out in *"Invalid argument"*) ;; *) fail "$1: want EINVAL, got: $out" ;; esac
	log=$(cat error_log); log=$(echo "$log" | sed 's/^\[[ 0-9.]*\] //')
	[ "$log" = "synthetic_events: error: $3
  Command: $1
$(pad $(($2 + 11)))^" ] || fail "error_log after $1: $log"
}
form='Command must be of the form: <name> field[;field] ...'
bad 'myevent chr arg' 8 'Invalid type'
bad 'myevent unsigned arg' 8 'Incomplete type'
bad 'myevent char str]; int v' 13 'Illegal name'
bad 'mye-vent char str[]' 0 'Illegal name'
bad 'myevent char st-r[]' 13 'Illegal name'
bad 'myevent char str;[]' 17 'Invalid field'
bad 'myevent char str; int' 18 'Invalid field'
bad 'myevent char str[; int v' 13 'Invalid array specification'
bad 'myevent char str[kdjdk]' 13 'Invalid array specification'
bad 'myevent char str[257]' 13 'Invalid array specification'
bad 'mye;vent char str[]' 0 "$form"
bad 'myevent ; char str[]' 0 "$form"
bad 'myevent; char str[]' 0 "$form"
bad 'myevent ;char str[]' 0 "$form"
bad '; char str[]' 0 "$form"
bad ';myevent char str[]' 0 "$form"
bad 'myevent' 0 "$form"
bad 'wakeup_latency u64 lat pid_t pid char' 33 'Invalid field'
bad 's:junk/myevent char str[' 0 'Command must be of the form: s or -:[synthetic/]<name> field[;field] ...' dynamic_events
[ -z "$(cat synthetic_events)" ] || fail "defined: $(cat synthetic_events)"
exit 0
