package live

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/ktrace-dev/ktrace/internal/vmtest"
)

// triggerScript runs traceoff, traceon, enable_event and disable_event
// triggers, with counts and filters, on kprobe events: a filtered
// traceoff (a post trigger: the hit that fires it is traced) used up by
// its count, tracing_on written back, an enable_event switching a soft
// mode event on once, a traceoff without a filter (run before the record:
// the hit that fires it is not traced), a disable_event, and an
// enable_hist and a disable_hist pausing and resuming another event's
// histogram. Each step
// prints tracing_on, the trigger files with their counts and the enable
// files; the trace holds dd's hits.
const triggerScript = `echo 'p:demo/w vfs_write count=%dx:u64' >> kprobe_events
echo 'p:demo/r vfs_read count=%dx:u64' >> kprobe_events
echo 'p:demo/o do_sys_openat2' >> kprobe_events
echo 1 > events/demo/w/enable
echo 'traceoff:2 if count == 77 && comm == "dd"' > events/demo/w/trigger
echo 'enable_event:demo:r:1 if count == 55 && comm == "dd"' >> events/demo/w/trigger
echo @@T1; cat events/demo/w/trigger; cat events/demo/r/enable; echo @@END-T1
dd if=/dev/zero of=/tmp/z bs=512 count=2 2>/dev/null
dd if=/dev/zero of=/tmp/z bs=77 count=1 2>/dev/null
dd if=/dev/zero of=/tmp/z bs=100 count=1 2>/dev/null
echo @@T2; cat tracing_on; cat events/demo/w/trigger; echo @@END-T2
echo 1 > tracing_on
dd if=/dev/zero of=/tmp/z bs=55 count=1 2>/dev/null
dd if=/tmp/z of=/dev/null bs=33 count=1 2>/dev/null
dd if=/dev/zero of=/tmp/z bs=77 count=1 2>/dev/null
echo @@T3; cat tracing_on; cat events/demo/w/trigger; cat events/demo/r/enable; echo @@END-T3
echo 1 > tracing_on
dd if=/dev/zero of=/tmp/z bs=77 count=1 2>/dev/null
echo @@T4; cat tracing_on; echo @@END-T4
echo 'traceoff' > events/demo/o/trigger
echo @@T5; cat events/demo/o/enable; cat events/demo/o/trigger; echo @@END-T5
cat /dev/null
echo @@T6; cat tracing_on; echo @@END-T6
echo 1 > tracing_on
echo 'disable_event:demo:w' > events/demo/o/trigger
cat /dev/null
dd if=/dev/zero of=/tmp/z bs=99 count=1 2>/dev/null
echo @@T7; cat events/demo/w/enable; echo @@END-T7
echo 'hist:keys=common_pid.execname:vals=hitcount:sort=hitcount:pause if comm == "dd"' >> events/demo/o/trigger
echo 'enable_hist:demo:o:1 if count == 88 && comm == "dd"' >> events/demo/w/trigger
echo 'disable_hist:demo:o if count == 66 && comm == "dd"' >> events/demo/w/trigger
dd if=/dev/zero of=/tmp/z bs=88 count=1 2>/dev/null
dd if=/dev/zero of=/tmp/z bs=10 count=1 2>/dev/null
dd if=/dev/zero of=/tmp/z bs=66 count=1 2>/dev/null
dd if=/dev/zero of=/tmp/z bs=10 count=1 2>/dev/null
echo @@T8; cat events/demo/o/trigger events/demo/w/trigger; grep -c dd events/demo/o/hist; grep Hits events/demo/o/hist; echo @@END-T8
echo '!hist:keys=common_pid.execname:vals=hitcount:sort=hitcount if comm == "dd"' >> events/demo/o/trigger
echo '!enable_hist:demo:o' >> events/demo/w/trigger
echo '!disable_hist:demo:o' >> events/demo/w/trigger
echo 0 > events/demo/w/enable
echo 0 > events/demo/r/enable
echo @@TRACE; grep -E 'demo|dd-' trace | grep 'dd-' | sed 's/^ *dd-[0-9]* *\[[0-9]*\] [^ ]* *[0-9.]*: //' ; echo @@END-TRACE
echo '!traceoff' >> events/demo/o/trigger
echo '!disable_event:demo:w' >> events/demo/o/trigger
echo '!traceoff' >> events/demo/w/trigger
echo '!enable_event:demo:r' >> events/demo/w/trigger
echo @@CLEAN; cat events/demo/o/trigger events/demo/w/trigger; echo > kprobe_events; echo "rc $?"; echo 1 > tracing_on; echo @@END-CLEAN
`

// staticTriggerScript runs the same commands on the kernel's static
// events: a filtered traceoff with a count, an enable_event switching a
// syscall event on (soft mode until then), a traceoff beside a hist
// trigger, and an unfiltered traceoff on an enabled event. A second
// command of a kind an event already has fails (EEXIST), and a truncating
// open removes only the hist triggers. Each dd exits (sched_process_exit)
// through exit_group; external programs only: ktrace sh runs cat, ls and
// grep itself.
const staticTriggerScript = `echo 1 > tracing_on
echo > trace
echo 1 > events/sched/sched_process_exit/enable
echo 'traceoff:1 if comm == "dd"' > events/sched/sched_process_exit/trigger
echo @@S1; cat events/sched/sched_process_exit/trigger events/sched/sched_process_exit/enable; echo @@END-S1
dd if=/dev/zero of=/dev/null count=1 2>/dev/null
echo @@S2; cat tracing_on events/sched/sched_process_exit/trigger; echo @@END-S2
sleep 1
echo 1 > tracing_on
echo 'enable_event:syscalls:sys_enter_exit_group:1 if comm == "dd"' > events/sched/sched_process_exit/trigger
echo @@S3; cat events/sched/sched_process_exit/trigger events/syscalls/sys_enter_exit_group/enable; echo @@END-S3
dd if=/dev/zero of=/dev/null count=2 2>/dev/null
sleep 1
echo @@S4; cat events/sched/sched_process_exit/trigger events/syscalls/sys_enter_exit_group/enable; echo @@END-S4
dd if=/dev/zero of=/dev/null count=4 2>/dev/null
echo 0 > events/syscalls/sys_enter_exit_group/enable
echo 'hist:keys=comm if comm == "dd"' > events/sched/sched_process_exit/trigger
echo 'traceoff if comm == "dd"' >> events/sched/sched_process_exit/trigger
dd if=/dev/zero of=/dev/null count=3 2>/dev/null
echo @@S5; cat tracing_on events/sched/sched_process_exit/enable; grep -c 'dd' events/sched/sched_process_exit/hist; echo @@END-S5
echo 0 > events/sched/sched_process_exit/enable
echo @@TRACE; grep -E '^ *dd-' trace | sed 's/^ *dd-[0-9]* *\[[0-9]*\] [^ ]* *[0-9.]*: //; s/pid=[0-9]*/pid=N/g; s/prio=[0-9]*/prio=N/'; echo @@END-TRACE
echo > events/sched/sched_process_exit/trigger
echo 1 > tracing_on
echo 1 > events/sched/sched_process_exit/enable
echo traceoff > events/sched/sched_process_exit/trigger
sleep 0
echo @@S6; cat tracing_on; echo @@END-S6
echo 0 > events/sched/sched_process_exit/enable
echo @@TRACE2; grep -c 'comm=sleep' trace; echo @@END-TRACE2
echo > events/sched/sched_process_exit/trigger
echo 1 > tracing_on
echo > trace
`

// TestTriggerLiveVM runs triggerScript on each pinned kernel's tracefs and
// under ktrace sh with the live backend, in the same boot: the same
// tracing_on, trigger and enable files at each step, and the same hits in
// the trace.
func TestTriggerLiveVM(t *testing.T) {
	vmtest.Require(t)
	kt := vmtest.Ktrace(t)
	vmtest.ForEachKernel(t, func(t *testing.T, k vmtest.Kernel) {
		var script string
		for _, sc := range []struct{ name, text string }{{"", triggerScript}, {"S", staticTriggerScript}} {
			script += "echo @@" + sc.name + "KERNEL\n" + sc.text + "echo @@END-" + sc.name + "KERNEL\n" +
				"echo @@" + sc.name + "KTRACE\n/bin/ktrace --kernel host sh -c " + vmtest.ShQuote(sc.text) + " 2>/tmp/sh.err\necho @@END-" + sc.name + "KTRACE\n" +
				"echo @@" + sc.name + "ERR; cat /tmp/sh.err; echo @@END-" + sc.name + "ERR\n"
		}
		ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
		defer cancel()
		out, err := vmtest.Run(ctx, k, vmtest.Guest{Script: script, Files: map[string][]byte{"/bin/ktrace": kt}})
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		s := string(out)
		kern, got := section(s, "KERNEL"), section(s, "KTRACE")
		if !strings.Contains(section(kern, "T3"), "count=0") || strings.Count(section(kern, "TRACE"), "\n") < 5 {
			t.Fatalf("the kernel's triggers did not fire (test premise):\n%s", kern)
		}
		for _, sec := range []string{"T1", "T2", "T3", "T4", "T5", "T6", "T7", "T8", "TRACE", "CLEAN"} {
			if w, g := section(kern, sec), section(got, sec); g != w {
				t.Errorf("%s:\n%s\nkernel's:\n%s\nstderr:\n%s", sec, g, w, section(s, "ERR"))
			}
		}
		kern, got = section(s, "SKERNEL"), section(s, "SKTRACE")
		if !strings.Contains(section(kern, "S2"), "count=0") || !strings.Contains(section(kern, "S4"), "1*") {
			t.Fatalf("the kernel's triggers on static events did not fire (test premise):\n%s", kern)
		}
		for _, sec := range []string{"S1", "S2", "S3", "S4", "S5", "S6", "TRACE", "TRACE2"} {
			if w, g := section(kern, sec), section(got, sec); g != w {
				t.Errorf("static events: %s:\n%s\nkernel's:\n%s\nstderr:\n%s", sec, g, w, section(s, "SERR"))
			}
		}
		t.Logf("%s: kernel's trace:\n%s", k.Name, section(kern, "TRACE"))
	})
}
