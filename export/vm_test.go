package export

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	colmetricspb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	logspb "go.opentelemetry.io/proto/otlp/logs/v1"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/ktrace-dev/ktrace/internal/vmtest"
)

// guestReceiverEnv makes TestGuestReceiver serve: the address to listen
// on. guestReceiverOut is where it writes what it receives, and it stops
// once guestReceiverStop exists.
const (
	guestReceiverEnv  = "KTRACE_GUEST_RECEIVER"
	guestReceiverOut  = "/tmp/recv.jsonl"
	guestReceiverStop = "/tmp/recv.stop"
	guestReceiverUp   = "/tmp/recv.up"
)

// TestGuestReceiver is the OTLP/gRPC receiver that runs inside the VM
// (this package's test binary, with KTRACE_GUEST_RECEIVER set): the
// collector's LogsService, writing every ResourceLogs it receives as one
// line of OTLP/JSON. Elsewhere it is skipped.
func TestGuestReceiver(t *testing.T) {
	addr := os.Getenv(guestReceiverEnv)
	if addr == "" {
		t.Skip("runs inside the VM only")
	}
	out, err := os.Create(guestReceiverOut)
	if err != nil {
		t.Fatal(err)
	}
	rcv := &receiver{}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer()
	collogspb.RegisterLogsServiceServer(s, rcv)
	colmetricspb.RegisterMetricsServiceServer(s, metricsService{r: rcv})
	go s.Serve(l)
	os.WriteFile(guestReceiverUp, nil, 0o644)
	for {
		if _, err := os.Stat(guestReceiverStop); err == nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	s.GracefulStop()
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	w := bufio.NewWriter(out)
	for _, rl := range rcv.logs {
		b, err := protojson.Marshal(rl)
		if err != nil {
			t.Fatal(err)
		}
		w.Write(b)
		w.WriteByte('\n')
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	out.Close()
}

// exportScript runs the receiver on the guest's loopback, then ktrace
// record --export otlp, configured only by OTEL_* variables, on a
// workload that opens 40 files, then stops the receiver and prints the
// text output, record's summary and what the receiver got.
const exportScript = `ip link set lo up 2>/dev/null || ifconfig lo 127.0.0.1 up
KTRACE_GUEST_RECEIVER=127.0.0.1:4317 /bin/export.test -test.run '^TestGuestReceiver$' >/tmp/recv.log 2>&1 &
rpid=$!
for i in $(seq 1 100); do [ -e /tmp/recv.up ] && break; sleep 0.1; done
i=0; while [ $i -lt 40 ]; do echo $i > /tmp/f$i; i=$((i+1)); done
OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4317 OTEL_EXPORTER_OTLP_PROTOCOL=grpc OTEL_RESOURCE_ATTRIBUTES=k8s.node.name=vm-node \
  /bin/ktrace --kernel host record --export otlp --metrics-addr 127.0.0.1:9464 --follow -w /tmp/rec.txt 'p:openat do_sys_openat2 dfd=$arg1:s32 path=+0($arg2):ustring' \
  -- sh -c 'i=0; while [ $i -lt 40 ]; do cat /tmp/f$i >/dev/null; i=$((i+1)); done; wget -q -O /tmp/metrics.txt http://127.0.0.1:9464/metrics' 2>/tmp/rec.err; echo "@@RC $?"
touch /tmp/recv.stop; wait $rpid; echo "@@RECVRC $?"
echo @@REC; cat /tmp/rec.txt; echo @@END-REC
echo @@RECERR; cat /tmp/rec.err; echo @@END-RECERR
echo @@RECVLOG; cat /tmp/recv.log; echo @@END-RECVLOG
echo @@RECV; cat /tmp/recv.jsonl; echo @@END-RECV
echo @@METRICS; grep ^ktrace_ /tmp/metrics.txt; echo @@END-METRICS
`

func section(out []byte, name string) string {
	s := string(out)
	i := strings.Index(s, "@@"+name+"\n")
	j := strings.Index(s, "@@END-"+name+"\n")
	if i < 0 || j < i {
		return ""
	}
	return s[i+len(name)+3 : j]
}

// TestExportVM runs ktrace record --export otlp in a 6.12 guest (no
// /boot/config, no image) against an OTLP/gRPC receiver on the guest's
// loopback: every line of the text output arrives once, as the body of
// a log record whose typed attributes agree with it, and nothing is
// dropped. The workload ends by scraping --metrics-addr: the hits of the
// event then are at least the workload's 80 opens (cat's 40 files, sh's
// 40 redirections to /dev/null).
func TestExportVM(t *testing.T) {
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
	kt := vmtest.Ktrace(t)
	tb := vmtest.TestBinary(t, "./export")
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	out, err := vmtest.Run(ctx, k, vmtest.Guest{
		Script: exportScript,
		Files:  map[string][]byte{"/bin/ktrace": kt, "/bin/export.test": tb},
		Memory: 1024,
	})
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !bytes.Contains(out, []byte("@@RC 0\n")) || !bytes.Contains(out, []byte("@@RECVRC 0\n")) {
		t.Fatalf("record or receiver failed:\n%s", out)
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
	// cat opens each of the 40 files (and its libraries, if any).
	files := map[string]bool{}
	pathRe := regexp.MustCompile(` path="(/tmp/f\d+)"`)
	for _, l := range lines {
		if m := pathRe.FindStringSubmatch(l); m != nil {
			files[m[1]] = true
		}
	}
	if len(files) != 40 {
		t.Fatalf("the text output shows %d of the 40 files:\n%s", len(files), section(out, "REC"))
	}
	bodies := map[string]int{}
	byBody := map[string]*logspb.LogRecord{}
	var resources []map[string]any
	for _, l := range strings.Split(section(out, "RECV"), "\n") {
		if l == "" {
			continue
		}
		var rl logspb.ResourceLogs
		if err := protojson.Unmarshal([]byte(l), &rl); err != nil {
			t.Fatalf("receiver output: %v\n%s", err, l)
		}
		res := map[string]any{}
		for _, kv := range rl.GetResource().GetAttributes() {
			res[kv.Key] = anyValue(kv.Value)
		}
		resources = append(resources, res)
		for _, sl := range rl.ScopeLogs {
			for _, lr := range sl.LogRecords {
				b := lr.Body.GetStringValue()
				bodies[b]++
				byBody[b] = lr
			}
		}
	}
	if len(bodies) == 0 {
		t.Fatalf("the receiver got nothing:\n%s", out)
	}
	total := 0
	for _, n := range bodies {
		total += n
	}
	metrics := section(out, "METRICS")
	hm := regexp.MustCompile(`(?m)^ktrace_event_hits_total\{event="kprobes/openat"\} (\S+)$`).FindStringSubmatch(metrics)
	if hm == nil {
		t.Errorf("the scrape has no hits for kprobes/openat:\n%s", metrics)
	} else if hits, err := strconv.ParseFloat(hm[1], 64); err != nil || hits < 80 {
		t.Errorf("scraped hits %s, want at least 80:\n%s", hm[1], metrics)
	}
	for _, want := range []string{`ktrace_event_misses_total{event="kprobes/openat"} 0`, `ktrace_events_lost_total{reason="ring_buffer_full"} 0`} {
		if !strings.Contains(metrics, want+"\n") {
			t.Errorf("the scrape has no %q:\n%s", want, metrics)
		}
	}
	t.Logf("%d text lines, %d log records received in %d requests", len(lines), total, len(resources))
	if total != len(lines) {
		t.Errorf("the receiver got %d records for %d text lines", total, len(lines))
	}
	for _, l := range lines {
		if bodies[l] != 1 {
			t.Errorf("text line received %d times: %q", bodies[l], l)
			continue
		}
		lr := byBody[l]
		attrs := map[string]any{}
		for _, kv := range lr.Attributes {
			attrs[kv.Key] = anyValue(kv.Value)
		}
		if comm, _ := attrs["comm"].(string); attrs["event"] != "kprobes/openat" || comm == "" || !strings.HasPrefix(strings.TrimSpace(l), comm+"-") {
			t.Errorf("%q: attributes %v", l, attrs)
		}
		if m := pathRe.FindStringSubmatch(l); m != nil && attrs["path"] != m[1] {
			t.Errorf("%q: path attribute %v", l, attrs["path"])
		}
		if _, ok := attrs["dfd"].(int64); !ok {
			t.Errorf("%q: dfd attribute %v is not an int", l, attrs["dfd"])
		}
		if pid, _ := attrs["pid"].(int64); !strings.Contains(l, fmt.Sprintf("-%d ", pid)) {
			t.Errorf("%q: pid attribute %v is not the line's", l, attrs["pid"])
		}
		// The guest's wall clock is the host's (qemu's RTC), to a few
		// seconds; the record is from this run.
		if d := time.Since(time.Unix(0, int64(lr.TimeUnixNano))); d < -time.Minute || d > 10*time.Minute {
			t.Errorf("%q: time %v is not now", l, time.Unix(0, int64(lr.TimeUnixNano)))
		}
	}
	for _, r := range resources {
		if r["service.name"] != "ktrace" || r["os.type"] != "linux" || r["k8s.node.name"] != "vm-node" ||
			!strings.HasPrefix(fmt.Sprint(r["os.version"]), "6.12") {
			t.Errorf("resource %v", r)
			break
		}
	}
}
