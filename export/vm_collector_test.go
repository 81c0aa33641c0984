package export

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ktrace-dev/ktrace/internal/vmtest"
)

// collectorVMScript starts the collector on the guest's loopback, runs
// ktrace record --export otlp, configured only by OTEL_* variables, on a
// workload that opens 40 files, then stops the collector and prints the
// text output, record's summary and the collector's file.
const collectorVMScript = `ip link set lo up 2>/dev/null || ifconfig lo 127.0.0.1 up
# listening: 127.0.0.1:4317 (0100007F:10DD) in state LISTEN (0A)
listening() { grep -q ' 0100007F:10DD 00000000:0000 0A ' /proc/net/tcp; }
/bin/otelcol --config file:/etc/otelcol.yaml >/tmp/col.log 2>&1 &
cpid=$!
for i in $(seq 1 600); do listening && break; sleep 0.1; done
listening && echo @@COLUP
i=0; while [ $i -lt 40 ]; do echo $i > /tmp/f$i; i=$((i+1)); done
OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4317 OTEL_EXPORTER_OTLP_PROTOCOL=grpc OTEL_RESOURCE_ATTRIBUTES=host.name=vm-node \
  /bin/ktrace --kernel host record --export otlp --follow -w /tmp/rec.txt 'p:openat do_sys_openat2 dfd=$arg1:s32 path=+0($arg2):ustring' \
  -- sh -c 'i=0; while [ $i -lt 40 ]; do cat /tmp/f$i >/dev/null; i=$((i+1)); done' 2>/tmp/rec.err; echo "@@RC $?"
kill -TERM $cpid; wait $cpid; echo "@@COLRC $?"
echo @@REC; cat /tmp/rec.txt; echo @@END-REC
echo @@RECERR; cat /tmp/rec.err; echo @@END-RECERR
echo @@COLLOG; cat /tmp/col.log; echo @@END-COLLOG
echo @@OUT; cat /tmp/otel.json; echo @@END-OUT
rm -f /tmp/otel.json
/bin/otelcol --config file:/etc/otelcol-mount.yaml >/tmp/colm.log 2>&1 &
cpid=$!
for i in $(seq 1 600); do listening && break; sleep 0.1; done
listening && echo @@COLMUP
mkdir -p /tmp/tr
OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4317 OTEL_EXPORTER_OTLP_PROTOCOL=grpc OTEL_RESOURCE_ATTRIBUTES=host.name=mount-node \
  /bin/ktrace --kernel host mount --export otlp --daemon /tmp/tr >/tmp/mpid 2>/tmp/m.err; echo "@@MRC $?"
echo 'p:mnt/openat do_sys_openat2 dfd=$arg1:s32 path=+0($arg2):ustring' >> /tmp/tr/kprobe_events
echo 1 > /tmp/tr/events/mnt/openat/enable
i=0; while [ $i -lt 40 ]; do cat /tmp/f$i >/dev/null; i=$((i+1)); done
echo 0 > /tmp/tr/events/mnt/openat/enable
cat /tmp/tr/trace > /tmp/mtrace.txt
mp=$(cat /tmp/mpid); kill $mp; for i in $(seq 1 300); do [ -d /proc/$mp ] || break; sleep 0.1; done
kill -TERM $cpid; wait $cpid
echo @@MTRACE; cat /tmp/mtrace.txt; echo @@END-MTRACE
echo @@MERR; cat /tmp/m.err; echo @@END-MERR
echo @@MOUT; cat /tmp/otelm.json; echo @@END-MOUT
`

// collectorVMBench is the export's overhead benchmark, in the same boot:
// per hit of a kprobe on getppid (3 register arguments), the workload's
// time beside the bare loop under ktrace record -w FILE, and under
// ktrace record --export otlp -w FILE exporting to the collector (which
// writes to /dev/null), alternated reps times (KTRACE_VM_BENCH_REPEAT,
// default 5). %[1]s is the workload,
// %[2]s the probe, %[3]d the reps.
const collectorVMBench = `/bin/otelcol --config file:/etc/otelcol-bench.yaml >/tmp/colb.log 2>&1 &
cpid=$!
for i in $(seq 1 600); do listening && break; sleep 0.1; done
listening && echo @@BENCHUP
%[1]s >/dev/null
r=0; while [ $r -lt %[3]d ]; do
  echo @@BASE$r; %[1]s; echo @@END-BASE$r
  echo @@TEXT$r; /bin/ktrace --kernel host record %[2]s -w /tmp/t.txt -- %[1]s 2>/tmp/e; echo @@END-TEXT$r
  echo @@TLINES$r; grep -c ' a: ' /tmp/t.txt; echo @@END-TLINES$r
  rm -f /tmp/t.txt
  echo @@EXPORT$r; OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4317 OTEL_EXPORTER_OTLP_PROTOCOL=grpc \
    /bin/ktrace --kernel host record --export otlp %[2]s -w /tmp/t.txt -- %[1]s 2>/tmp/e; echo @@END-EXPORT$r
  echo @@ELINES$r; grep -c ' a: ' /tmp/t.txt; cat /tmp/e; echo @@END-ELINES$r
  rm -f /tmp/t.txt
  r=$((r+1))
done
kill -TERM $cpid; wait $cpid
`

// TestCollectorVM runs ktrace record --export otlp in a 6.12 guest (no
// /boot/config, no image) against the real collector (export/otelcol,
// static) on the guest's loopback: every line of the text output reaches
// the collector's file once, as the body of a log record whose typed
// attributes agree with it, under the resource record was given, and
// nothing is dropped. With KTRACE_VM_BENCH=1 the same boot then measures
// the export's cost per hit (collectorVMBench) and reports it as a
// FIGURE, not gated.
func TestCollectorVM(t *testing.T) {
	vmtest.Require(t)
	var k vmtest.Kernel
	for _, kk := range vmtest.Kernels(t) {
		if kk.Name == "6.12" {
			k = kk
		}
	}
	if k.Name == "" {
		t.Skip("no 6.12 kernel")
	}
	col, err := os.ReadFile(collectorBinary(t))
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{
		"/bin/ktrace":             vmtest.Ktrace(t),
		"/bin/otelcol":            col,
		"/etc/otelcol.yaml":       []byte(collectorConfig("127.0.0.1:4317", "/tmp/otel.json")),
		"/etc/otelcol-bench.yaml": []byte(collectorConfig("127.0.0.1:4317", "/dev/null")),
		"/etc/otelcol-mount.yaml": []byte(collectorConfig("127.0.0.1:4317", "/tmp/otelm.json")),
	}
	script := collectorVMScript
	bench := os.Getenv("KTRACE_VM_BENCH") == "1"
	const calls, probe = 200000, `p:b/a __x64_sys_getppid x=%di y=%si z=%dx`
	// Emulation on a shared machine varies from run to run: the runs
	// alternate and the medians are reported.
	reps := 5
	if v := os.Getenv("KTRACE_VM_BENCH_REPEAT"); v != "" {
		fmt.Sscan(v, &reps)
	}
	if bench {
		files["/bin/workload"] = vmtest.Binary(t, "./internal/vmtest/workload")
		script += fmt.Sprintf(collectorVMBench, fmt.Sprintf("/bin/workload getppid %d", calls), vmtest.ShQuote(probe), reps)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	out, err := vmtest.Run(ctx, k, vmtest.Guest{Script: script, Files: files, Memory: 2048, CPUs: 2})
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !strings.Contains(string(out), "@@COLUP\n") {
		t.Fatalf("the collector did not listen:\n%s", out)
	}
	if !strings.Contains(string(out), "@@RC 0\n") || !strings.Contains(string(out), "@@COLRC 0\n") {
		t.Fatalf("record or the collector failed:\n%s", out)
	}
	recErr := section(out, "RECERR")
	if strings.Contains(recErr, "ktrace: export: metrics:") {
		t.Errorf("the metrics were not exported:\n%s", recErr)
	}
	if !strings.Contains(recErr, " 0 dropped (0 queue full, 0 export failed)") {
		t.Errorf("record's summary does not say nothing was dropped:\n%s", recErr)
	}
	var lines []string
	for _, l := range strings.Split(section(out, "REC"), "\n") {
		if strings.Contains(l, " openat: (") {
			lines = append(lines, l)
		}
	}
	files40 := map[string]bool{}
	pathRe := regexp.MustCompile(` path="(/tmp/f\d+)"`)
	for _, l := range lines {
		if m := pathRe.FindStringSubmatch(l); m != nil {
			files40[m[1]] = true
		}
	}
	if len(files40) != 40 {
		t.Fatalf("the text output shows %d of the 40 files:\n%s", len(files40), section(out, "REC"))
	}
	tmp := t.TempDir() + "/otel.json"
	if err := os.WriteFile(tmp, []byte(section(out, "OUT")), 0o644); err != nil {
		t.Fatal(err)
	}
	got := readCollected(t, tmp)
	bodies := got.records()
	received := countRecords(bodies)
	t.Logf("%d text lines, %d log records received in %d resource logs", len(lines), received, len(got.logs))
	if received != len(lines) {
		t.Errorf("the collector got %d records for %d text lines", received, len(lines))
	}
	for _, l := range lines {
		a := bodies[l]
		if len(a) != 1 {
			t.Errorf("text line received %d times: %q", len(a), l)
			continue
		}
		attrs, r := a[0].attrs, a[0].res
		if comm, _ := attrs["comm"].(string); attrs["event"] != "kprobes/openat" || comm == "" || !strings.HasPrefix(strings.TrimSpace(l), comm+"-") {
			t.Errorf("%q: attributes %v", l, attrs)
		}
		if m := pathRe.FindStringSubmatch(l); m != nil && attrs["path"] != m[1] {
			t.Errorf("%q: path attribute %v", l, attrs["path"])
		}
		if dfd, ok := attrs["dfd"].(int64); !ok || !strings.Contains(l, fmt.Sprintf(" dfd=%d ", dfd)) {
			t.Errorf("%q: dfd attribute %v is not the line's int", l, attrs["dfd"])
		}
		if pid, _ := attrs["pid"].(int64); !strings.Contains(l, fmt.Sprintf("-%d ", pid)) {
			t.Errorf("%q: pid attribute %v is not the line's", l, attrs["pid"])
		}
		if d := time.Since(time.Unix(0, int64(a[0].rec.TimeUnixNano))); d < -time.Minute || d > 30*time.Minute {
			t.Errorf("%q: time %v is not now", l, time.Unix(0, int64(a[0].rec.TimeUnixNano)))
		}
		if r["service.name"] != "ktrace" || r["os.type"] != "linux" || r["host.name"] != "vm-node" ||
			!strings.HasPrefix(fmt.Sprint(r["os.version"]), "6.12") {
			t.Errorf("%q: resource %v", l, r)
		}
	}
	// The hits the collector got: every open of the workload at least
	// (cat's 40 files, sh's 40 redirections to /dev/null).
	if hits := got.lastCounts()["vm-node "+MetricHits+" event=kprobes/openat"]; hits < 80 || hits < int64(len(lines)) {
		t.Errorf("the collector got %s = %d, want at least 80 and the %d lines printed", MetricHits, hits, len(lines))
	}
	checkMountExport(t, out)
	if bench {
		benchFigure(t, string(out), k.Name, probe, calls, reps)
	}
}

// checkMountExport checks the mount's part of the guest's run: each
// openat line of the mount's trace reached the collector once, as a log
// record of event mnt/openat from host mount-node, and no other record
// of that event came.
func checkMountExport(t *testing.T, out []byte) {
	t.Helper()
	if !strings.Contains(string(out), "@@COLMUP\n") || !strings.Contains(string(out), "@@MRC 0\n") {
		t.Fatalf("the mount's collector or the mount did not start:\n%s\n%s", section(out, "MERR"), out)
	}
	var lines []string
	for _, l := range strings.Split(section(out, "MTRACE"), "\n") {
		if strings.Contains(l, " openat: (") {
			lines = append(lines, l)
		}
	}
	if len(lines) < 40 {
		t.Fatalf("the mount's trace has %d openat lines, want the 40 files' at least:\n%s", len(lines), section(out, "MTRACE"))
	}
	tmp := t.TempDir() + "/otelm.json"
	if err := os.WriteFile(tmp, []byte(section(out, "MOUT")), 0o644); err != nil {
		t.Fatal(err)
	}
	got := readCollected(t, tmp)
	bodies := got.records()
	byBody := map[string][]arrival{}
	n := 0
	for body, a := range bodies {
		for _, r := range a {
			if r.attrs["event"] == "mnt/openat" && r.res["host.name"] == "mount-node" {
				byBody[strings.TrimSpace(body)] = append(byBody[strings.TrimSpace(body)], r)
				n++
			}
		}
	}
	for _, l := range lines {
		if a := byBody[strings.TrimSpace(l)]; len(a) != 1 {
			t.Errorf("the mount's trace line was received %d times: %q", len(a), l)
		}
	}
	if n != len(lines) {
		t.Errorf("the collector got %d records of mnt/openat for the mount's %d trace lines", n, len(lines))
	}
	t.Logf("mount --export otlp: %d trace lines, %d log records received", len(lines), n)
}

// benchFigure reports collectorVMBench's figure: the medians of the
// per-hit overheads, and their ratio.
func benchFigure(t *testing.T, out, kernel, probe string, calls, reps int) {
	if !strings.Contains(out, "@@BENCHUP\n") {
		t.Fatalf("the benchmark's collector did not listen:\n%s", out)
	}
	nsop := regexp.MustCompile(`(\d+) ns/op`)
	ns := func(sec string) int {
		if m := nsop.FindStringSubmatch(section([]byte(out), sec)); m != nil {
			v, _ := strconv.Atoi(m[1])
			return v
		}
		return 0
	}
	first := func(sec string) int {
		var v int
		fmt.Sscan(strings.TrimSpace(section([]byte(out), sec)), &v)
		return v
	}
	median := func(v []int) int {
		v = append([]int(nil), v...)
		sort.Ints(v)
		return v[len(v)/2]
	}
	var base, text, exp, tl, el, exported, dropped []int
	for r := 0; r < reps; r++ {
		id := strconv.Itoa(r)
		b, x, e := ns("BASE"+id), ns("TEXT"+id), ns("EXPORT"+id)
		m := exportSummary.FindStringSubmatch(section([]byte(out), "ELINES"+id))
		if b == 0 || x == 0 || e == 0 || m == nil {
			t.Errorf("run %d: missing timings or summary:\n%s", r, out)
			continue
		}
		xd, _ := strconv.Atoi(m[1])
		dd, _ := strconv.Atoi(m[2])
		base, text, exp = append(base, b), append(text, x-b), append(exp, e-b)
		tl, el = append(tl, first("TLINES"+id)), append(el, first("ELINES"+id))
		exported, dropped = append(exported, xd), append(dropped, dd)
	}
	if len(base) == 0 {
		return
	}
	mt, me := median(text), median(exp)
	ratio := 0.0
	if mt > 0 {
		ratio = float64(me) / float64(mt)
	}
	// Each export run beside the text run just before it: the machine's
	// load drifts less within a pair than across the runs.
	var pairs []float64
	for i := range text {
		if text[i] > 0 {
			pairs = append(pairs, float64(exp[i])/float64(text[i]))
		}
	}
	sort.Float64s(pairs)
	pair := 0.0
	if len(pairs) > 0 {
		pair = pairs[len(pairs)/2]
	}
	t.Logf("FIGURE %s export per hit (%q): %d getppid calls, 2 vCPUs (TCG), median of %d: base %d ns/call; ktrace record -w +%d ns (%d events); ktrace record --export otlp -w to the collector +%d ns (%d events, %d exported, %d dropped); ratio %.2f, median of the runs' ratios %.2f (runs: text %v, export %v)",
		kernel, probe, calls, len(base), median(base), mt, median(tl), me, median(el), median(exported), median(dropped), ratio, pair, text, exp)
}
