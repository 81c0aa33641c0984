package live

import (
	"context"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/ktrace-dev/ktrace/internal/vmtest"
)

// histScript puts hist triggers on two kprobe events and an event probe, one enabled with a
// filter and one left disabled (soft mode: its histogram counts, nothing
// is traced), runs dd workloads, pauses and clears a histogram, and prints
// the trace, the hist and trigger files and the error of a bad trigger.
// Two are keyed on the kernel stack: the kernel's key is the stack below
// its tracer's frames, which ktrace makes from the stack its program saw.
// Every trigger has an "if" on the comm: only dd's hits count, whatever
// else runs in the guest. Several keys have one hit each: the kernel lists
// entries that sort equal in the order its hash table and heapsort leave
// them. It runs as is on the kernel's tracefs and under
// `ktrace sh`, whose programs count the histograms.
const histScript = `echo 'p:demo/w vfs_write count=%dx:u64 c=$comm:string' >> kprobe_events
echo 'r:demo/wret vfs_write ret=$retval:s64' >> kprobe_events
echo 'comm == "dd" && count > 100' > events/demo/w/filter
echo 'hist:keys=count.log2:vals=hitcount:sort=count if comm == "dd"' > events/demo/w/trigger
echo 'hist:keys=c,count:vals=count:sort=count.descending if c ~ "d*"' >> events/demo/w/trigger
echo 'hist:keys=count.buckets=1000:vals=count.hex:sort=hitcount.descending,count if comm == "dd"' >> events/demo/w/trigger
echo 'hist:keys=count:vals=count.percent,count.graph:sort=count if comm == "dd" && count > 500' >> events/demo/w/trigger
echo 'hist:keys=ret:sort=ret if comm == "dd"' > events/demo/wret/trigger
echo 'hist:keys=common_pid.execname,ret.hex:size=128 if comm == "dd" && ret > 2000' >> events/demo/wret/trigger
echo 'hist:keys=ret if comm == "dd"' >> events/demo/wret/trigger
echo 'hist:keys=__probe_ret_ip.sym-offset,__probe_func.sym if comm == "dd"' >> events/demo/wret/trigger
echo 'hist:keys=stacktrace:vals=ret if comm == "dd"' >> events/demo/wret/trigger
echo 'hist:keys=count:vals=hitcount:sort=count if comm == "dd"' > events/syscalls/sys_enter_write/trigger
echo 'hist:keys=comm,prio:vals=hitcount if comm == "dd"' > events/sched/sched_process_exit/trigger
echo 'hist:keys=stacktrace if comm == "dd"' >> events/sched/sched_process_exit/trigger
echo 'hist:keys=id.syscall:sort=id if comm == "dd" && id < 4' > events/raw_syscalls/sys_enter/trigger
echo 'e:demo/ep syscalls/sys_enter_write cnt=$count:u64 f=$fd:s32' >> dynamic_events
echo 'hist:keys=cnt.log2,f if comm == "dd"' > events/demo/ep/trigger
echo 'cnt > 1000 && comm == "dd"' > events/demo/ep/filter
echo 1 > events/demo/w/enable
echo 1 > events/demo/ep/enable
dd if=/dev/zero of=/tmp/z bs=512 count=8 2>/dev/null
dd if=/dev/zero of=/tmp/z bs=100 count=3 2>/dev/null
dd if=/dev/zero of=/tmp/z bs=4000 count=2 2>/dev/null
dd if=/dev/zero of=/tmp/z bs=2500 count=5 2>/dev/null
for b in 700 800 900 1100 1200 1300 1400 1500 1600 1700; do dd if=/dev/zero of=/tmp/z bs=$b count=1 2>/dev/null; done
echo 'hist:keys=ret:sort=ret:pause if comm == "dd"' >> events/demo/wret/trigger
dd if=/dev/zero of=/tmp/z bs=64 count=9 2>/dev/null
echo @@PAUSED; cat events/demo/wret/trigger; echo @@END-PAUSED
echo 'hist:keys=count.log2:vals=hitcount:sort=count:clear if comm == "dd"' >> events/demo/w/trigger
dd if=/dev/zero of=/tmp/z bs=3000 count=1 2>/dev/null
echo 0 > events/demo/w/enable
echo 0 > events/demo/ep/enable
echo @@TRACE; cat trace; echo @@END-TRACE
echo @@HIST; cat events/demo/w/hist; echo @@; cat events/demo/wret/hist; echo @@; cat events/demo/ep/hist; echo @@END-HIST
echo @@STATIC; cat events/syscalls/sys_enter_write/hist events/sched/sched_process_exit/hist events/raw_syscalls/sys_enter/hist | sed 's/\[ *[0-9]*\]/[PID]/'; cat events/sched/sched_process_exit/enable; echo @@END-STATIC
echo @@ENABLE; cat events/demo/w/enable events/demo/wret/enable; echo @@END-ENABLE
echo > error_log
echo 'hist:keys=nosuch' >> events/demo/w/trigger
echo 'hist:keys=count:sort=bogus' >> events/demo/w/trigger
echo @@BAD; cat error_log; echo @@END-BAD
echo > kprobe_events
echo @@BUSY $?; echo @@END-BUSY
echo '!hist:keys=ret:sort=ret:pause if comm == "dd"' >> events/demo/wret/trigger
echo @@TRIGGERS; cat events/demo/w/trigger events/demo/wret/trigger; echo @@END-TRIGGERS
echo > events/demo/w/trigger
echo > events/demo/wret/trigger
echo > events/syscalls/sys_enter_write/trigger
echo > events/sched/sched_process_exit/trigger
echo > events/raw_syscalls/sys_enter/trigger
echo > events/demo/ep/trigger
echo > dynamic_events
echo > trace
echo > kprobe_events
`

// execPid is the pid part of a common_pid.execname key.
var execPid = regexp.MustCompile(`\[ *\d+\]`)

// TestHistLiveVM runs histScript on each pinned kernel's tracefs and
// under `ktrace sh` with the live backend, in the same boot, and wants
// the same hist files, trigger files, error_log entries and enable
// states, and the same events in the trace.
func TestHistLiveVM(t *testing.T) {
	vmtest.Require(t)
	ks, err := vmtest.PinnedKernels()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	kt, err := vmtest.BuildStatic(ctx, "./cmd/ktrace")
	if err != nil {
		t.Fatal(err)
	}
	quoted := "'" + strings.ReplaceAll(histScript, "'", `'\''`) + "'"
	for _, k := range ks {
		t.Run(k.Name, func(t *testing.T) {
			script := "echo @@KERNEL\n" + histScript + "echo @@END-KERNEL\n" +
				"echo @@KTRACE\n/bin/ktrace --kernel host sh -c " + quoted + " 2>/tmp/sh.err; echo \"@@RC $?\"\necho @@END-KTRACE\n" +
				"echo @@ERR; cat /tmp/sh.err; echo @@END-ERR\n"
			out, err := vmtest.Run(ctx, k, vmtest.Guest{Script: script, Files: map[string][]byte{"/bin/ktrace": kt}})
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			s := string(out)
			kern, kt := section(s, "KERNEL"), section(s, "KTRACE")
			if !strings.Contains(kern, "Hits: ") {
				t.Fatalf("the kernel printed no histogram (test premise):\n%s", kern)
			}
			want, got := traceEvents(section(kern, "TRACE")), traceEvents(section(kt, "TRACE"))
			sort.Strings(want)
			sort.Strings(got)
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("trace events:\n%s\nkernel's:\n%s\nstderr:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"), section(s, "ERR"))
			}
			for _, sec := range []string{"PAUSED", "HIST", "STATIC", "ENABLE", "BAD", "BUSY", "TRIGGERS"} {
				// dd's pids differ between the two runs.
				norm := func(s string) string {
					return execPid.ReplaceAllString(errorLogTS.ReplaceAllString(s, ""), "[PID]")
				}
				w, g := norm(section(kern, sec)), norm(section(kt, sec))
				if g != w {
					t.Errorf("%s:\n%s\nkernel's:\n%s\nstderr:\n%s", sec, g, w, section(s, "ERR"))
				}
			}
			t.Logf("%s: kernel's hist files:\n%s", k.Name, section(kern, "HIST"))
		})
	}
}

// histDropScript fills a 128-entry histogram with 150 distinct keys: the
// kernel's table keeps the first 128 and counts the hits of the others as
// dropped.
const histDropScript = `echo 'p:demo/w vfs_write count=%dx:u64' >> kprobe_events
echo 'hist:keys=count:size=128 if comm == "dd"' > events/demo/w/trigger
i=1; while [ $i -le 150 ]; do dd if=/dev/zero of=/tmp/z bs=$i count=1 2>/dev/null; i=$((i+1)); done
echo @@TOTALS; tail -4 events/demo/w/hist; echo @@END-TOTALS
echo > events/demo/w/trigger
echo > kprobe_events
`

// TestHistDropsVM wants the same Hits, Entries and Dropped from a full
// histogram on the kernel's tracefs and under ktrace sh (a BPF hash map of
// the trigger's size).
func TestHistDropsVM(t *testing.T) {
	vmtest.Require(t)
	kt := vmtest.Ktrace(t)
	vmtest.ForEachKernel(t, func(t *testing.T, k vmtest.Kernel) {
		script := "echo @@KERNEL\n" + histDropScript + "echo @@END-KERNEL\n" +
			"echo @@KTRACE\n/bin/ktrace --kernel host sh -c " + vmtest.ShQuote(histDropScript) + " 2>/tmp/sh.err\necho @@END-KTRACE\ncat /tmp/sh.err\n"
		ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
		defer cancel()
		out, err := vmtest.Run(ctx, k, vmtest.Guest{Script: script, Files: map[string][]byte{"/bin/ktrace": kt}})
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		s := string(out)
		want, got := section(section(s, "KERNEL"), "TOTALS"), section(section(s, "KTRACE"), "TOTALS")
		if !strings.Contains(want, "Entries: 128") || strings.Contains(want, "Dropped: 0") {
			t.Fatalf("the kernel's histogram did not fill (test premise):\n%s", s)
		}
		if got != want {
			t.Errorf("totals:\n%s\nkernel's:\n%s\n%s", got, want, s)
		}
	})
}
