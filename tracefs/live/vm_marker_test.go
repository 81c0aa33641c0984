package live

import (
	"regexp"
	"strings"
	"testing"

	"github.com/ktrace-dev/ktrace/internal/vmtest"
)

// markerScript puts triggers on the trace_marker's event (ftrace/print)
// and writes markers: histograms with filters on buf (the text as
// written, its newline included, before the trace adds one), a snapshot
// trigger (each write is swapped aside with the trace it was reserved
// in), traceoff:1 (it runs after the write is committed; the next write
// fails), and a latency between two writes through a synthetic event.
// The writer's pid and comm differ between the kernel's shell and
// ktrace sh, so the keys are ip.sym (with the address left out: ktrace
// stores tracing_mark_write's start, the kernel an address inside it)
// and the synthetic event's latency class.
const markerScript = `p=events/ftrace/print
strip() { grep -v '^#' | sed 's/^ *[^ ]*-[0-9]* *\[[0-9]*\] [^ ]* *[0-9.]*: /: /'; }
echo > trace
ls $p | tr '\n' ' '; echo
echo 'hist:keys=ip.sym:vals=hitcount if buf ~ "he*"' >> $p/trigger
echo 'hist:keys=ip.sym:vals=hitcount:sort=hitcount if buf == "end" || buf == "end2"' >> $p/trigger
for i in 1 2 3; do echo hello > trace_marker; done
echo -n end > trace_marker
echo end > trace_marker
echo -n xend > trace_marker
cat $p/hist | sed 's/\[[0-9a-f]*\]/[ADDR]/'
cat $p/trigger
echo '!hist:keys=ip.sym:vals=hitcount if buf ~ "he*"' >> $p/trigger
echo '!hist:keys=ip.sym:vals=hitcount:sort=hitcount if buf == "end" || buf == "end2"' >> $p/trigger
echo 0 > snapshot
echo > trace
echo snapshot >> $p/trigger
for i in 1 2 3 4 5; do echo "hello $i" > trace_marker; done
echo trace:; strip < trace
echo snapshot:; strip < snapshot
echo '!snapshot' >> $p/trigger
echo 0 > snapshot
echo > trace
echo 'traceoff:1 if buf ~ "off*"' >> $p/trigger
echo on > trace_marker
echo off > trace_marker
echo "tracing_on $(cat tracing_on)"
echo after > trace_marker 2>/dev/null; echo "write with tracing off: $?"
cat $p/trigger
strip < trace
echo 1 > tracing_on
echo '!traceoff:1 if buf ~ "off*"' >> $p/trigger
echo 'latency u64 lat' >> synthetic_events
echo 'hist:keys=common_pid:ts0=common_timestamp.usecs if buf == "start"' >> $p/trigger
echo 'hist:keys=common_pid:lat=common_timestamp.usecs-$ts0:onmatch(ftrace.print).latency($lat) if buf == "end"' >> $p/trigger
echo 'hist:keys=lat.log2:sort=lat' >> events/synthetic/latency/trigger
echo -n start > trace_marker
echo -n end > trace_marker
echo -n end > trace_marker
cat events/synthetic/latency/hist | sed 's/2^[0-9]* */2^N /'
echo '!hist:keys=lat.log2:sort=lat' >> events/synthetic/latency/trigger
echo '!hist:keys=common_pid:lat=common_timestamp.usecs-$ts0:onmatch(ftrace.print).latency($lat) if buf == "end"' >> $p/trigger
echo '!hist:keys=common_pid:ts0=common_timestamp.usecs if buf == "start"' >> $p/trigger
echo '!latency u64 lat' >> synthetic_events
echo > trace
`

// TestMarkerLiveVM runs markerScript on each pinned kernel's tracefs and
// under ktrace sh in the same boot, whose live backend runs the
// trace_marker event's triggers in a BPF program for each write: the same
// histograms, trace and snapshot lines, trigger files and tracing state.
func TestMarkerLiveVM(t *testing.T) {
	vmtest.Require(t)
	kt := vmtest.Ktrace(t)
	vmtest.ForEachKernel(t, func(t *testing.T, k vmtest.Kernel) {
		s := runPairs(t, k, kt, pairScript{"", markerScript})
		kern, got := section(s, "KERNEL"), section(s, "KTRACE")
		if !strings.Contains(kern, "Hits: 3") || !strings.Contains(kern, "tracing_on 0") {
			t.Fatalf("the kernel's trace_marker triggers did not fire as expected (test premise):\n%s", kern)
		}
		// The trace's task column was stripped; the hist files' pids
		// are not in the script's keys.
		norm := regexp.MustCompile(`\[ *\d+\]`)
		if norm.ReplaceAllString(got, "") != norm.ReplaceAllString(kern, "") {
			t.Errorf("ktrace:\n%s\nkernel's:\n%s\nstderr:\n%s", got, kern, section(s, "ERR"))
		}
	})
}
