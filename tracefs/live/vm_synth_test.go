package live

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/ktrace-dev/ktrace/internal/vmtest"
)

// synthScript is the latency pattern of the kernel's histogram
// documentation on kprobes: the entry of vfs_write saves a timestamp and
// the count in variables keyed by pid, its return computes the latency
// from them (reading the timestamp once) and generates a synthetic event
// with it, the pid and the count; the synthetic event has a histogram of
// its own and is traced while enabled. A trigger on process exit reads
// the same timestamp in an expression: the return consumed it, so it
// generates nothing. Another synthetic event is generated from a static
// event's histogram, with a parameter read without consuming. Values
// that are expressions are summed but not shown.
const synthScript = `echo 'wlat u64 lat; int pid; u64 cnt' >> synthetic_events
echo 'wl2 u64 lat; int pid' >> synthetic_events
echo 'wl3 u64 d' >> synthetic_events
echo 'wl4 u64 n' >> synthetic_events
echo 'p:demo/w vfs_write count=%dx:u64' >> kprobe_events
echo 'r:demo/wret vfs_write ret=$retval:s64' >> kprobe_events
echo 'hist:keys=common_pid:ts0=common_timestamp.usecs,c=count,ts1=common_timestamp if comm == "dd"' > events/demo/w/trigger
echo 'hist:keys=common_pid:lat=common_timestamp.usecs-$ts0:onmatch(demo.w).wlat($lat,common_pid,$c) if comm == "dd"' > events/demo/wret/trigger
echo 'hist:keys=cnt:vals=hitcount:sort=cnt' > events/synthetic/wlat/trigger
echo 'hist:keys=count:vals=hitcount,count*2:sort=count if comm == "dd"' >> events/demo/w/trigger
echo 'hist:keys=ret:d=ret*2-ret/3:vals=hitcount:sort=ret if comm == "dd"' >> events/demo/wret/trigger
echo 'hist:keys=common_timestamp:vals=hitcount:sort=common_timestamp if comm == "dd"' >> events/demo/wret/trigger
echo 'hist:keys=common_pid:x=common_timestamp.usecs-$ts0:onmatch(demo.w).trace(wl3,$x) if comm == "dd"' > events/sched/sched_process_exit/trigger
echo 'hist:keys=common_pid:onmatch(demo.w).trace(wl2,$ts1,common_pid) if comm == "dd"' >> events/sched/sched_process_exit/trigger
echo 'hist:keys=d' > events/synthetic/wl3/trigger
echo 'hist:keys=common_pid:vals=hitcount:m=count:sort=common_pid:onmax($m).save(count,common_pid) if comm == "dd"' >> events/demo/w/trigger
echo 'hist:keys=common_pid:vals=hitcount:n=count:sort=common_pid.descending:onchange($n).trace(wl4,$n) if comm == "dd"' >> events/demo/w/trigger
echo 1 > events/synthetic/wl4/enable
echo 'hist:keys=pid:vals=hitcount' > events/synthetic/wl2/trigger
echo 1 > events/synthetic/wlat/enable
echo 1 > events/synthetic/wl3/enable
dd if=/dev/zero of=/tmp/z bs=512 count=3 2>/dev/null
dd if=/dev/zero of=/tmp/z bs=100 count=2 2>/dev/null
dd if=/dev/zero of=/tmp/z bs=4000 count=1 2>/dev/null
echo 0 > events/synthetic/wlat/enable
dd if=/dev/zero of=/tmp/z bs=77 count=1 2>/dev/null
echo @@TRACE; cat trace; echo @@END-TRACE
echo @@HIST; cat events/synthetic/wlat/hist events/demo/w/hist events/demo/wret/hist events/synthetic/wl3/hist; echo @@END-HIST
echo @@WL2; grep -c 'pid:' events/synthetic/wl2/hist; tail -3 events/synthetic/wl2/hist; echo @@END-WL2
echo @@TS; grep -c '{ common_timestamp: ' events/demo/wret/hist; echo @@END-TS
echo @@TRIGGERS; cat events/demo/w/trigger events/demo/wret/trigger events/sched/sched_process_exit/trigger events/synthetic/wlat/trigger; echo @@END-TRIGGERS
echo @@BUSY; { echo > synthetic_events; } 2>/dev/null; echo "rc $?"; { echo '!wlat' >> synthetic_events; } 2>/dev/null; echo "rc $?"; echo @@END-BUSY
echo @@CLEAN
echo 0 > events/synthetic/wl4/enable
for f in synthetic/wlat synthetic/wl2 synthetic/wl3 sched/sched_process_exit demo/wret demo/w; do { echo > events/$f/trigger; } 2>/dev/null; echo "$f $?"; done
echo > trace
{ echo > kprobe_events; } 2>/dev/null; echo "kprobe_events $?"
{ echo > synthetic_events; } 2>/dev/null; echo "synthetic_events $?"
cat synthetic_events kprobe_events; echo @@END-CLEAN
`

// wakeupScript is the wakeup-latency example of the kernel's histogram
// documentation on the scheduler's static events: sched_waking saves a
// timestamp per pid, sched_switch computes the latency when the task runs
// and generates a synthetic event with the pid, priority and comm (a
// static string), and another with the previous task's comm (a dynamic
// string), from a variable of its own (the first consumes $ts0), and the
// documentation's onmax($wakeup_lat).save(next_comm,...) with strings
// saved in the entries. The
// sleeping processes run busybox by path: both shells fork and exec it.
const wakeupScript = `echo 'wakeup_latency u64 lat; pid_t pid; int prio; char comm[16]' >> synthetic_events
echo 'wlat2 u64 lat; char comm[]' >> synthetic_events
echo 'hist:keys=pid:ts0=common_timestamp.usecs if comm == "busybox"' >> events/sched/sched_waking/trigger
echo 'hist:keys=next_pid:wakeup_lat=common_timestamp.usecs-$ts0:onmatch(sched.sched_waking).wakeup_latency($wakeup_lat,next_pid,next_prio,next_comm) if next_comm == "busybox"' >> events/sched/sched_switch/trigger
echo 'hist:keys=comm,prio:vals=hitcount:sort=comm' >> events/synthetic/wakeup_latency/trigger
echo 'hist:keys=pid:vals=hitcount:ts1=common_timestamp.usecs:sort=pid if comm == "busybox"' >> events/sched/sched_waking/trigger
echo 'hist:keys=next_pid:l2=common_timestamp.usecs-$ts1:onmatch(sched.sched_waking).wlat2($l2,prev_comm) if next_comm == "busybox"' >> events/sched/sched_switch/trigger
echo 'hist:keys=pid:vals=hitcount:ts2=common_timestamp.usecs:sort=hitcount.descending if comm == "busybox"' >> events/sched/sched_waking/trigger
echo 'hist:keys=next_pid:vals=hitcount:wl=common_timestamp.usecs-$ts2:sort=hitcount:onmax($wl).save(next_comm,prev_prio,prev_comm) if next_comm == "busybox"' >> events/sched/sched_switch/trigger
echo 1 > events/synthetic/wakeup_latency/enable
echo 1 > events/synthetic/wlat2/enable
/bin/busybox sleep 0.1
/bin/busybox sleep 0.1
/bin/busybox sleep 0.1
echo 0 > events/synthetic/wakeup_latency/enable
echo 0 > events/synthetic/wlat2/enable
echo @@TRACE; grep -E 'wakeup_latency|wlat2' trace | sed 's/^.*: wakeup_latency/wakeup_latency/; s/^.*: wlat2/wlat2/; s/lat=[0-9]*/lat=N/; s/pid=[0-9]*/pid=N/'; echo @@END-TRACE
echo @@HIST; cat events/synthetic/wakeup_latency/hist; echo @@END-HIST
echo @@MAX; cat events/sched/sched_switch/hist | grep -v '^#' | sed 's/next_pid: *[0-9]*/next_pid: P/; s/max: *[0-9]*/max: N/; s/prev_prio:.*$/prev: P/' | sort | uniq -c; echo @@END-MAX
`

// chainScript chains synthetic events as the histogram documentation's
// combined example does: waking and wakeup latencies are generated from
// the scheduler's events, and the wakeup latency's own histogram
// generates a third event from a variable of each (its key, pid and lat,
// begins with the pid the variables' histograms are keyed by). The
// sleeping processes run busybox by path: both shells fork and exec it.
const chainScript = `echo 'cwaking u64 lat; pid_t pid' >> synthetic_events
echo 'cwakeup u64 lat; pid_t pid' >> synthetic_events
echo 'cww u64 lat; pid_t pid' >> synthetic_events
s=events/sched
y=events/synthetic
a='hist:keys=pid:cwaking_lat=common_timestamp.usecs-$cts0:onmatch(sched.sched_waking).cwaking($cwaking_lat,pid) if comm=="busybox"'
b='hist:keys=next_pid:cwakeup_lat=common_timestamp.usecs-$cts1:onmatch(sched.sched_wakeup).cwakeup($cwakeup_lat,next_pid) if next_comm=="busybox"'
c='hist:keys=pid,lat:sort=pid,lat:cww_lat=$cwaking_lat+$cwakeup_lat:onmatch(synthetic.cwakeup).cww($cww_lat,pid)'
echo 'hist:keys=pid:cts0=common_timestamp.usecs if comm=="busybox"' >> $s/sched_waking/trigger
echo "$a" >> $s/sched_wakeup/trigger
echo 'hist:keys=pid:cts1=common_timestamp.usecs if comm=="busybox"' >> $s/sched_wakeup/trigger
echo "$b" >> $s/sched_switch/trigger
echo "$c" >> $y/cwakeup/trigger
echo 'hist:keys=pid:vals=hitcount,lat:sort=pid' >> $y/cww/trigger
for e in cwaking cwakeup cww; do echo 1 > $y/$e/enable; done
/bin/busybox sleep 0.1
/bin/busybox sleep 0.1
/bin/busybox sleep 0.1
for e in cwaking cwakeup cww; do echo 0 > $y/$e/enable; done
echo @@TRACE; grep -E 'c(waking|wakeup|ww):' trace | sed 's/^.*: \(c[a-z]*:\)/\1/; s/lat=[0-9]*/lat=N/; s/pid=[0-9]*/pid=N/'; echo @@END-TRACE
echo @@HIST; cat $y/cww/hist | sed 's/pid: *[0-9]*/pid: P/; s/lat: *[0-9]*/lat: N/'; echo @@END-HIST
echo @@TRIGGERS; cat $y/cwakeup/trigger; echo @@END-TRIGGERS
echo '!hist:keys=pid:vals=hitcount,lat:sort=pid' >> $y/cww/trigger
echo "!$c" >> $y/cwakeup/trigger
echo "!$b" >> $s/sched_switch/trigger
echo '!hist:keys=pid:cts1=common_timestamp.usecs if comm=="busybox"' >> $s/sched_wakeup/trigger
echo "!$a" >> $s/sched_wakeup/trigger
echo '!hist:keys=pid:cts0=common_timestamp.usecs if comm=="busybox"' >> $s/sched_waking/trigger
for e in cww cwakeup cwaking; do echo "!$e" >> synthetic_events; done
echo @@CLEAN; grep -c '^c' synthetic_events; echo @@END-CLEAN
echo local > trace_clock
echo > trace
`

// prevTask is the previous task's comm in the wakeup script's wlat2
// records (wakeupScript).
var prevTask = regexp.MustCompile(`(wlat2: lat=N comm=)\S+`)

// synthNorm hides what differs between two runs of synthScript: the
// latencies, pids and timestamps.
var synthNorm = regexp.MustCompile(`lat=\d+|pid=\d+|d=\d+|(common_pid|pid|d|common_timestamp): +\d+|\[ *\d+\]`)

// TestSynthLiveVM runs synthScript on each pinned kernel's tracefs and
// under ktrace sh with the live backend, in the same boot: the same
// synthetic events in the trace, the same hist and trigger files.
func TestSynthLiveVM(t *testing.T) {
	vmtest.Require(t)
	kt := vmtest.Ktrace(t)
	vmtest.ForEachKernel(t, func(t *testing.T, k vmtest.Kernel) {
		s := runPairs(t, k, kt, pairScript{"", synthScript}, pairScript{"W", wakeupScript}, pairScript{"C", chainScript})
		kern, got := section(s, "KERNEL"), section(s, "KTRACE")
		events := func(trace string) string {
			var lines []string
			for _, e := range traceEvents(trace) {
				lines = append(lines, synthNorm.ReplaceAllString(e, "N"))
			}
			return strings.Join(lines, "\n")
		}
		want := events(section(kern, "TRACE"))
		if strings.Count(want, "wlat:") != 9 || strings.Count(want, "wl4:") < 5 {
			t.Fatalf("the kernel traced no synthetic events (test premise):\n%s", kern)
		}
		if g := events(section(got, "TRACE")); g != want {
			t.Errorf("trace events:\n%s\nkernel's:\n%s\nstderr:\n%s", g, want, section(s, "ERR"))
		}
		for _, sec := range []string{"HIST", "WL2", "TS", "TRIGGERS", "BUSY", "CLEAN"} {
			w, g := synthNorm.ReplaceAllString(section(kern, sec), "N"), synthNorm.ReplaceAllString(section(got, sec), "N")
			if g != w {
				t.Errorf("%s:\n%s\nkernel's:\n%s\nstderr:\n%s", sec, g, w, section(s, "ERR"))
			}
		}
		t.Logf("%s: kernel's trace:\n%s\nhist files:\n%s", k.Name, section(kern, "TRACE"), section(kern, "HIST"))
		kern, got = section(s, "WKERNEL"), section(s, "WKTRACE")
		if strings.Count(section(kern, "TRACE"), "wakeup_latency:") != 3 || strings.Count(section(kern, "TRACE"), "wlat2:") != 3 {
			t.Fatalf("the kernel generated no wakeup latencies (test premise):\n%s", kern)
		}
		// The task switched out when a sleeper runs again is whatever
		// ran then: mostly the idle task, sometimes a kernel thread, or
		// under ktrace one of its own threads (the Go runtime's monitor
		// wakes every few milliseconds). It is not compared.
		prev := func(s string) string { return prevTask.ReplaceAllString(s, "${1}PREV") }
		for _, sec := range []string{"TRACE", "HIST", "MAX"} {
			if w, g := prev(section(kern, sec)), prev(section(got, sec)); g != w {
				t.Errorf("wakeup latency: %s:\n%s\nkernel's:\n%s\nstderr:\n%s", sec, g, w, section(s, "WERR"))
			}
		}
		kern, got = section(s, "CKERNEL"), section(s, "CKTRACE")
		if strings.Count(section(kern, "TRACE"), "cww:") != 3 {
			t.Fatalf("the kernel generated no chained latencies (test premise):\n%s", kern)
		}
		// A switch into the sleeper from one of ktrace's own threads
		// is not seen (its programs skip ktrace's own hits), so ktrace
		// may see fewer wakeups than the kernel: each one it sees must
		// generate the chain as the kernel's do, and its histogram count
		// them.
		tr := section(got, "TRACE")
		n := strings.Count(tr, "cww:")
		if n == 0 || strings.Count(tr, "cwakeup: lat=N pid=N\ncww: lat=N pid=N") != n || strings.Count(tr, "cwakeup:") != n {
			t.Errorf("chained synthetic events: TRACE:\n%s\nkernel's:\n%s\nstderr:\n%s", tr, section(kern, "TRACE"), section(s, "CERR"))
		} else if n != 3 {
			t.Logf("chained synthetic events: ktrace saw %d of the kernel's 3 wakeups", n)
		}
		if h := section(got, "HIST"); !strings.Contains(h, fmt.Sprintf("Hits: %d\n    Entries: %d\n", n, n)) || strings.Count(h, "} hitcount:          1  lat: N") != n {
			t.Errorf("chained synthetic events: HIST, for %d records:\n%s\nkernel's:\n%s", n, h, section(kern, "HIST"))
		}
		for _, sec := range []string{"TRIGGERS", "CLEAN"} {
			if w, g := section(kern, sec), section(got, sec); g != w {
				t.Errorf("chained synthetic events: %s:\n%s\nkernel's:\n%s\nstderr:\n%s", sec, g, w, section(s, "CERR"))
			}
		}
	})
}
