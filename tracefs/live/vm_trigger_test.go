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
// the hit that fires it is not traced) and a disable_event. Each step
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
echo 0 > events/demo/w/enable
echo 0 > events/demo/r/enable
echo @@TRACE; grep -E 'demo|dd-' trace | grep 'dd-' | sed 's/^ *dd-[0-9]* *\[[0-9]*\] [^ ]* *[0-9.]*: //' ; echo @@END-TRACE
echo > events/demo/o/trigger
echo > events/demo/w/trigger
echo > kprobe_events
`

// TestTriggerLiveVM runs triggerScript on each pinned kernel's tracefs and
// under ktrace sh with the live backend, in the same boot: the same
// tracing_on, trigger and enable files at each step, and the same hits in
// the trace.
func TestTriggerLiveVM(t *testing.T) {
	vmtest.Require(t)
	kt := vmtest.Ktrace(t)
	vmtest.ForEachKernel(t, func(t *testing.T, k vmtest.Kernel) {
		script := "echo @@KERNEL\n" + triggerScript + "echo @@END-KERNEL\n" +
			"echo @@KTRACE\n/bin/ktrace --kernel host sh -c " + vmtest.ShQuote(triggerScript) + " 2>/tmp/sh.err\necho @@END-KTRACE\n" +
			"echo @@ERR; cat /tmp/sh.err; echo @@END-ERR\n"
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
		for _, sec := range []string{"T1", "T2", "T3", "T4", "T5", "T6", "T7", "TRACE"} {
			if w, g := section(kern, sec), section(got, sec); g != w {
				t.Errorf("%s:\n%s\nkernel's:\n%s\nstderr:\n%s", sec, g, w, section(s, "ERR"))
			}
		}
		t.Logf("%s: kernel's trace:\n%s", k.Name, section(kern, "TRACE"))
	})
}
