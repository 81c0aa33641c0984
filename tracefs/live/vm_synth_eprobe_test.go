package live

import (
	"regexp"
	"strings"
	"testing"

	"github.com/ktrace-dev/ktrace/internal/vmtest"
)

// synthEprobeScript puts event probes on a synthetic event, as the
// kernel's selftest trigger-synthetic-eprobe does: openat's entry saves
// the user's file name pointer per pid, its exit generates synth_open
// with it and the return value, and one event probe reads the name as a
// user string through the synthetic field, another keeps only successful
// opens with an "if" filter on the synthetic record. Each probe traces
// whether or not the synthetic event is enabled (it counts hits while
// disabled: kprobe_profile has no eprobes, so the trace shows it), and a
// disabled one stops. The files are read by busybox run by its path,
// which ktrace sh runs as a process of its own, as the kernel's shell does.
const synthEprobeScript = `echo 'synth_open unsigned long filename; long ret' > synthetic_events
echo 'hist:keys=common_pid:__arg__1=filename if comm == "busybox"' > events/syscalls/sys_enter_openat/trigger
echo 'hist:keys=common_pid:filename=$__arg__1,ret=ret:onmatch(syscalls.sys_enter_openat).trace(synth_open,$filename,$ret) if comm == "busybox"' > events/syscalls/sys_exit_openat/trigger
echo 'e:eprobe_open synthetic/synth_open file=+0($filename):ustring ret=$ret:s64' >> dynamic_events
echo 'e:ep2 synthetic.synth_open r=$ret:x32 if ret > 0' >> dynamic_events
echo 1 > events/eprobes/eprobe_open/enable
echo 1 > events/eprobes/ep2/enable
/bin/busybox cat /proc/version > /dev/null
/bin/busybox cat /nonexistent 2>/dev/null
echo 0 > events/eprobes/eprobe_open/enable
/bin/busybox cat /init > /dev/null
echo 1 > events/synthetic/synth_open/enable
/bin/busybox cat /proc/cmdline > /dev/null
echo 0 > events/eprobes/ep2/enable
/bin/busybox cat /proc/uptime > /dev/null
echo 0 > events/synthetic/synth_open/enable
echo @@TRACE; cat trace; echo @@END-TRACE
echo @@BUSY; { echo '!synth_open unsigned long filename; long ret' >> synthetic_events; } 2>/dev/null; echo "rc $?"; echo @@END-BUSY
echo @@CLEAN
echo '-:eprobe_open' >> dynamic_events
echo '-:ep2' >> dynamic_events
echo '!hist:keys=common_pid:filename=$__arg__1,ret=ret:onmatch(syscalls.sys_enter_openat).trace(synth_open,$filename,$ret) if comm == "busybox"' > events/syscalls/sys_exit_openat/trigger
echo '!hist:keys=common_pid:__arg__1=filename if comm == "busybox"' > events/syscalls/sys_enter_openat/trigger
echo '!synth_open unsigned long filename; long ret' >> synthetic_events
cat dynamic_events; ls events/eprobes 2>&1 | wc -l; echo @@END-CLEAN
`

// userPtr is the synthetic event's file name pointer, different run to run.
var userPtr = regexp.MustCompile(`filename=\d+`)

// TestSynthEprobeLiveVM runs synthEprobeScript on each pinned kernel's
// tracefs and under ktrace sh with the live backend in the same boot, and
// wants the same trace events (the synthetic event's value of the user
// pointer, which differs run to run, normalised), the same refusal to
// remove a synthetic event an event probe is on, and the same clean up.
func TestSynthEprobeLiveVM(t *testing.T) {
	vmtest.Require(t)
	kt := vmtest.Ktrace(t)
	vmtest.ForEachKernel(t, func(t *testing.T, k vmtest.Kernel) {
		s := runPairs(t, k, kt, pairScript{"", synthEprobeScript})
		kern, got := section(s, "KERNEL"), section(s, "KTRACE")
		events := func(trace string) string {
			var lines []string
			for _, e := range traceEvents(trace) {
				lines = append(lines, userPtr.ReplaceAllString(e, "filename=N"))
			}
			return strings.Join(lines, "\n")
		}
		want := events(section(kern, "TRACE"))
		if strings.Count(want, "eprobe_open:") < 2 || strings.Count(want, "ep2:") < 2 {
			t.Fatalf("the kernel traced no event probes on the synthetic event (test premise):\n%s", kern)
		}
		if g := events(section(got, "TRACE")); g != want {
			t.Errorf("trace events:\n%s\nkernel's:\n%s\nstderr:\n%s", g, want, section(s, "ERR"))
		}
		for _, sec := range []string{"BUSY", "CLEAN"} {
			if w, g := section(kern, sec), section(got, sec); g != w {
				t.Errorf("%s:\n%s\nkernel's:\n%s\nstderr:\n%s", sec, g, w, section(s, "ERR"))
			}
		}
		t.Logf("%s: kernel's trace:\n%s", k.Name, section(kern, "TRACE"))
	})
}
