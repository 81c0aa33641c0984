package live

import (
	"regexp"
	"strings"
	"testing"

	"github.com/ktrace-dev/ktrace/internal/vmtest"
)

// stackScript fires stacktrace triggers on a system call's event, two
// static events, a kprobe and a kretprobe, for tasks of the script's
// (sync, a shell's fork, a sleep, dd), and prints the trace's stack entries
// without their times and pids; then removes the probes, which clears
// the trace (they were enabled, in soft mode).
const stackScript = `ln -s busybox /bin/dd 2>/dev/null
echo 0 > options/stacktrace
t=events/syscalls/sys_enter_sync/trigger
echo 'stacktrace:1' >> $t
sync
echo '!stacktrace' >> $t
echo 'stacktrace:1 if comm == "sh"' >> events/sched/sched_process_fork/trigger
sh -c 'true | true'
echo '!stacktrace:1 if comm == "sh"' >> events/sched/sched_process_fork/trigger
t=events/sched/sched_switch/trigger
echo 'stacktrace:1 if prev_comm == "busybox" && prev_state == 1' >> $t
/bin/busybox sleep 0.05
echo '!stacktrace:1 if prev_comm == "busybox" && prev_state == 1' >> $t
echo 'p:kp vfs_read' >> kprobe_events
echo 'r:kr vfs_read' >> kprobe_events
echo 'stacktrace:1 if comm == "dd"' >> events/kprobes/kp/trigger
echo 'stacktrace:1 if comm == "dd"' >> events/kprobes/kr/trigger
dd if=/dev/zero of=/dev/null count=1 2>/dev/null
echo '!stacktrace:1 if comm == "dd"' >> events/kprobes/kp/trigger
echo '!stacktrace:1 if comm == "dd"' >> events/kprobes/kr/trigger
echo @@STACKS; grep -v '^#' trace | sed 's/^ *\([^ ]*\)-[0-9]* *\[[0-9]*\] [^ ]* *[0-9.]*: /\1: /'; echo @@END-STACKS
echo > kprobe_events
echo @@CLEARED; grep -vc '^#' trace; echo @@END-CLEARED
`

// trampoline is an ftrace trampoline's address in a stack: allocated
// when its ftrace_ops is registered, so not the same in two runs.
var trampoline = regexp.MustCompile(`0xffffffffc[0-9a-f]+`)

// sleeper is the sleeping busybox's stack entry's task: the kernel names
// it from its saved cmdlines when the trace is read, which hold its
// command only if a later switch on its CPU recorded it (a trace entry
// since the last one on that CPU), so "<...>" as often as not.
var sleeper = regexp.MustCompile(`(?m)^(<\.\.\.>|busybox): `)

// TestStacktraceLiveVM runs stackScript on each pinned kernel's tracefs
// and under ktrace sh in the same boot: the same stacks, function for
// function, the kernel tracer's own frames on top.
func TestStacktraceLiveVM(t *testing.T) {
	vmtest.Require(t)
	kt := vmtest.Ktrace(t)
	vmtest.ForEachKernel(t, func(t *testing.T, k vmtest.Kernel) {
		s := runPairs(t, k, kt, pairScript{"", stackScript})
		kern := trampoline.ReplaceAllString(section(section(s, "KERNEL"), "STACKS"), "TRAMPOLINE")
		got := trampoline.ReplaceAllString(section(section(s, "KTRACE"), "STACKS"), "TRAMPOLINE")
		kern, got = sleeper.ReplaceAllString(kern, "SLEEPER: "), sleeper.ReplaceAllString(got, "SLEEPER: ")
		if strings.Count(kern, "<stack trace>") != 5 {
			t.Fatalf("the kernel's stacktrace triggers did not fire as expected (test premise):\n%s", s)
		}
		if got != kern {
			t.Errorf("stacks:\n%s\nkernel's:\n%s\nstderr:\n%s", got, kern, section(s, "ERR"))
		}
		// Removing probes that were enabled (here in soft mode, for
		// their triggers) clears the trace.
		if w, g := section(section(s, "KERNEL"), "CLEARED"), section(section(s, "KTRACE"), "CLEARED"); g != w {
			t.Errorf("entries after the probes' removal: %s, kernel's: %s", g, w)
		}
	})
}
