package tracer

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ktrace-dev/ktrace/internal/vmtest"
)

// killLines are the probes of every kill run: a kretprobe with a
// maxactive other than the default (only tracefs can create it), a plain
// kretprobe, a kprobe and an fprobe.
var killLines = []string{
	`r5:kt/ret vfs_read $retval`,
	`r:kt/r ksys_read`,
	`p:kt/e vfs_read`,
	`f:kt/f vfs_write`,
}

// killMoments are when each run is killed with SIGKILL: during start-up
// after a delay (seconds), "tracing" once every probe is registered, and
// "detach" just after a SIGTERM began detaching.
var killMoments = []string{"0.05", "0.2", "0.5", "1", "tracing", "detach"}

// killScript is the guest script: one run per moment, each followed by a
// listing of every place a probe could be left.
func killScript() string {
	var sc strings.Builder
	var args []string
	for _, l := range killLines {
		args = append(args, shQuote(l))
	}
	rec := "/bin/ktrace --kernel host record -w /tmp/o --duration 120s " + strings.Join(args, " ") + " 2>/tmp/err &\npid=$!\n"
	// A kprobe shows in kprobes/list; a kprobe-multi link (6.12) is an
	// ftrace callback, in enabled_functions.
	waitAttached := "for i in $(seq 1 300); do grep -q ksys_read /sys/kernel/debug/kprobes/list enabled_functions && grep -q 'vfs_read+' /sys/kernel/debug/kprobes/list && grep -q ktrace_ kprobe_events && break; sleep 0.1; done\n"
	leftovers := "cat kprobe_events uprobe_events dynamic_events /sys/kernel/debug/kprobes/list enabled_functions 2>/dev/null"
	for _, when := range killMoments {
		sc.WriteString(rec)
		switch when {
		case "tracing":
			sc.WriteString(waitAttached)
			sc.WriteString(sectionCmd("REGISTERED-"+when, leftovers))
			sc.WriteString("kill -9 $pid\n")
		case "detach":
			sc.WriteString(waitAttached)
			sc.WriteString("kill -TERM $pid; sleep 0.02; kill -9 $pid\n")
		default:
			fmt.Fprintf(&sc, "sleep %s; kill -9 $pid\n", when)
		}
		// The reaper retries removals the kernel refuses while the dead
		// process's files are being closed; give it a moment.
		sc.WriteString("wait $pid 2>/dev/null; sleep 1\n")
		sc.WriteString(sectionCmd("LEFT-"+when, leftovers))
	}
	sc.WriteString(sectionCmd("BUILDINFO", "ls /boot /proc/config.gz 2>/dev/null"))
	return sc.String()
}

// TestKillLeavesNothingVM kills ktrace record with SIGKILL at several
// moments on both pinned kernels, in guests without the kernel's config or
// image, and requires that nothing stays registered: kprobe_events,
// uprobe_events, dynamic_events, kprobes/list and enabled_functions (the
// ftrace callbacks of kprobe-multi links) are empty after every
// kill, with no other ktrace started in between. While tracing, the
// probes must be registered (the kill must hit something).
func TestKillLeavesNothingVM(t *testing.T) {
	kt, _ := guestBinaries(t)
	vmtest.ForEachKernel(t, func(t *testing.T, k vmtest.Kernel) {
		ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
		defer cancel()
		out, err := vmtest.Run(ctx, k, vmtest.Guest{
			Script: killScript(),
			Files:  map[string][]byte{"/bin/ktrace": kt},
		})
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		s := string(out)
		if info := strings.TrimSpace(section(s, "BUILDINFO")); info != "" {
			t.Fatalf("the guest shows build files: %s", info)
		}
		reg := section(s, "REGISTERED-tracing")
		for _, want := range []string{"ksys_read", "vfs_read", "ktrace_"} {
			if !strings.Contains(reg, want) {
				t.Errorf("while tracing, %s is not registered:\n%s", want, reg)
			}
		}
		for _, when := range killMoments {
			if left := strings.TrimSpace(section(s, "LEFT-"+when)); left != "" {
				t.Errorf("killed at %s: left behind:\n%s", when, left)
			}
		}
	})
}
