package tracer

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/ktrace-dev/ktrace/internal/vmtest"
)

// hostnameLine is the acceptance example.
const hostnameLine = `p:myev do_sys_openat2 path=+0($arg2):string`

// lifecycleScript runs, in one boot: the example with the kernel's
// tracer and ktrace record on the same definition; then ktrace record
// killed with SIGKILL while attached (a kprobe through the perf_kprobe PMU,
// or on 6.12 a kprobe-multi link, an ftrace callback listed in
// enabled_functions, and a kretprobe with maxactive, which cilium/ebpf
// creates in tracefs);
// then a second ktrace start, which must remove the stale tracefs entry.
const lifecycleScript = `echo '` + hostnameLine + `' >> kprobe_events
echo 1 > events/kprobes/myev/enable
echo > trace
/bin/ktrace --kernel host record '` + hostnameLine + `' -- cat /etc/hostname >/tmp/rec.out 2>/tmp/rec.err; echo "@@RC $?"
echo 0 > events/kprobes/myev/enable
echo @@KERNEL; cat trace; echo @@END-KERNEL
echo @@REC; cat /tmp/rec.out; echo @@END-REC
echo @@RECERR; cat /tmp/rec.err; echo @@END-RECERR
echo > kprobe_events
/bin/ktrace --kernel host record 'r8:rm vfs_read $retval' 'p:kp vfs_write' -w /tmp/k.txt 2>/tmp/k.err &
pid=$!
for i in $(seq 1 120); do grep -q vfs_read /sys/kernel/debug/kprobes/list && grep -q vfs_write /sys/kernel/debug/kprobes/list enabled_functions && break; sleep 1; done
echo @@ATTACHED; cat /sys/kernel/debug/kprobes/list enabled_functions; grep ktrace_ kprobe_events; echo @@END-ATTACHED
kill -9 $pid; wait $pid; sleep 1
echo @@AFTERKILL; cat /sys/kernel/debug/kprobes/list enabled_functions; grep ktrace_ kprobe_events; echo @@END-AFTERKILL
/bin/ktrace --kernel host record 'p:kp vfs_write' --duration 1s -w /tmp/k2.txt 2>/tmp/k2.err
echo @@AFTERNEXT; cat /sys/kernel/debug/kprobes/list enabled_functions; grep ktrace_ kprobe_events; echo @@END-AFTERNEXT
`

// TestRecordLifecycleVM checks on both pinned kernels that
//   - ktrace record 'p:myev do_sys_openat2 path=+0($arg2):string' -- cat
//     /etc/hostname prints, for cat's hits, the same line bodies as the
//     kernel's tracer with the same definition;
//   - after kill -9 of an attached ktrace no probe is left in
//     /sys/kernel/debug/kprobes/list, enabled_functions or kprobe_events: the perf-event
//     probes close with the process, and the reaper removes the tracefs
//     kretprobe a maxactive forces.
func TestRecordLifecycleVM(t *testing.T) {
	kt, _ := guestBinaries(t)
	vmtest.ForEachKernel(t, func(t *testing.T, k vmtest.Kernel) {
		ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
		defer cancel()
		out, err := vmtest.Run(ctx, k, vmtest.Guest{
			Script: lifecycleScript,
			Files: map[string][]byte{
				"/bin/ktrace":   kt,
				"/etc/hostname": []byte("ktrace-vm\n"),
			},
		})
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		s := string(out)
		if !strings.Contains(s, "@@RC 0") {
			t.Fatalf("record failed:\n%s", section(s, "RECERR"))
		}
		kern := parseTrace(section(s, "KERNEL"), "cat")["myev"]
		rec := parseTrace(section(s, "REC"), "cat")["myev"]
		if len(kern) == 0 || len(kern) != len(rec) {
			t.Errorf("cat's hits: kernel %d, ktrace %d\nkernel:\n%s\nktrace:\n%s", len(kern), len(rec), section(s, "KERNEL"), section(s, "REC"))
		}
		found := false
		for i := 0; i < len(kern) && i < len(rec); i++ {
			if kern[i].body != rec[i].body {
				t.Errorf("hit %d: ktrace %q, kernel %q", i, rec[i].body, kern[i].body)
			}
			if kern[i].body == ` path="/etc/hostname"` {
				found = true
			}
		}
		if !found {
			t.Errorf("no hit opening /etc/hostname:\n%s", section(s, "REC"))
		}
		if !strings.Contains(section(s, "REC"), "ktrace-vm") {
			t.Errorf("cat's output missing from record's stdout:\n%s", section(s, "REC"))
		}
		t.Logf("%s: %d hits of cat equal; summary:\n%s", k.Name, len(rec), section(s, "RECERR"))

		attached := section(s, "ATTACHED")
		if !strings.Contains(attached, "vfs_read") || !strings.Contains(attached, "vfs_write") {
			t.Fatalf("probes not attached:\n%s", attached)
		}
		after := section(s, "AFTERKILL")
		if strings.TrimSpace(after) != "" {
			t.Errorf("probes survived kill -9:\n%s", after)
		}
		t.Logf("%s: after kill -9:\n%s", k.Name, after)
		if next := section(s, "AFTERNEXT"); strings.TrimSpace(next) != "" {
			t.Errorf("left attached after the next ktrace run:\n%s", next)
		}
	})
}
