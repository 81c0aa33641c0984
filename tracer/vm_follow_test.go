package tracer

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/ktrace-dev/ktrace/internal/vmtest"
)

// followScript runs record --follow and --pid while another process keeps
// opening /tmp/noise.txt: only the followed tree's opens (cat's, and its
// grandchild's in a subshell) and only the given pid's may be recorded.
// The --pid target reads its file ten times once the probe is listed (a
// kprobe in kprobes/list, a kprobe-multi link's ftrace callback in
// enabled_functions), since it is listed a moment before its program is
// attached.
const followScript = `echo x > /tmp/mine.txt; echo y > /tmp/noise.txt
( while :; do cat /tmp/noise.txt >/dev/null; done ) 2>/dev/null & noise=$!
/bin/ktrace --kernel host record --follow -w /tmp/f.txt 'p:fo/op do_sys_openat2 path=+0(%si):string' -- sh -c 'cat /etc/hostname >/dev/null; (cat /tmp/mine.txt >/dev/null); sleep 0.2' 2>/tmp/fe
printf '@@%s\n' FOLLOW; cat /tmp/f.txt; printf '@@%s\n' END-FOLLOW
printf '@@%s\n' FOLLOWERR; cat /tmp/fe; printf '@@%s\n' END-FOLLOWERR
sh -c 'until grep -q do_sys_openat2 /sys/kernel/debug/kprobes/list /sys/kernel/tracing/enabled_functions; do sleep 0.1; done; for i in 1 2 3 4 5 6 7 8 9 10; do read x < /tmp/mine.txt; sleep 0.3; done' & target=$!
/bin/ktrace --kernel host record --pid $target --count 1 --duration 60s -w /tmp/p.txt 'p:fo/op do_sys_openat2 path=+0(%si):string' 2>/tmp/pe
printf '@@%s\n' PID; cat /tmp/p.txt; printf '@@%s\n' END-PID
printf '@@%s\n' PIDERR; cat /tmp/pe; printf '@@%s\n' END-PIDERR
kill $noise
`

// TestFollowVM checks on both pinned kernels that record --follow records
// the opens of the command's whole process tree and nothing of a process
// outside it, and that --pid records that process alone; both filters run
// in the probes' programs.
func TestFollowVM(t *testing.T) {
	kt, _ := guestBinaries(t)
	vmtest.ForEachKernel(t, func(t *testing.T, k vmtest.Kernel) {
		ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
		defer cancel()
		out, err := vmtest.Run(ctx, k, vmtest.Guest{Script: followScript, Files: map[string][]byte{"/bin/ktrace": kt}})
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		s := string(out)
		fol, pid := section(s, "FOLLOW"), section(s, "PID")
		for _, want := range []string{`path="/etc/hostname"`, `path="/tmp/mine.txt"`} {
			if !strings.Contains(fol, want) {
				t.Errorf("--follow: no open of %s:\n%s\n%s", want, fol, section(s, "FOLLOWERR"))
			}
		}
		if strings.Contains(fol, "/tmp/noise.txt") {
			t.Errorf("--follow recorded a process outside the tree:\n%s", fol)
		}
		if !strings.Contains(pid, `path="/tmp/mine.txt"`) {
			t.Errorf("--pid: no open of /tmp/mine.txt:\n%s\n%s", pid, section(s, "PIDERR"))
		}
		if strings.Contains(pid, "/tmp/noise.txt") {
			t.Errorf("--pid recorded another process:\n%s", pid)
		}
	})
}
