# lib.sh: the steps the example scripts share, sourced by each as
#   . "$(dirname "$0")/lib.sh"
# The tracefs is $TRACEFS (default /sys/kernel/tracing): a `ktrace mount`
# directory works the same; under `ktrace sh` the default is the emulation.

# ex_start NAME COMMAND [ARG...]: a usage error without COMMAND; sets T, the
# tracefs, and comm, the name the trace gives COMMAND's processes.
ex_start() {
	ex_name=$1
	shift
	[ $# -gt 0 ] || { echo "usage: $ex_name COMMAND [ARG...]" >&2; exit 2; }
	T=${TRACEFS:-/sys/kernel/tracing}
	comm=$(basename "$1" | cut -c1-15)
}

# ex_define LINE...: adds each probe line to kprobe_events.
ex_define() {
	for ex_line; do
		echo "$ex_line" >> "$T/kprobe_events" || exit 1
	done
}

# ex_run EVENTS COMMAND [ARG...]: clears the trace and runs COMMAND with
# events/EVENTS enabled (an event, or a group); status is its exit status.
ex_run() {
	ex_enable=$T/events/$1/enable
	shift
	echo > "$T/trace"
	echo 1 > "$ex_enable" || exit 1
	"$@"
	status=$?
	echo 0 > "$ex_enable"
}

# ex_trace [PATTERN]: the trace lines of COMMAND's processes, where
# PATTERN follows "COMM-PID ".
ex_trace() {
	cat "$T/trace" | grep " $comm-[0-9]* $1"
}

# ex_end GROUP/EVENT...: removes the events and exits with COMMAND's
# status.
ex_end() {
	for ex_event; do
		echo "-:$ex_event" >> "$T/kprobe_events"
	done
	exit $status
}
