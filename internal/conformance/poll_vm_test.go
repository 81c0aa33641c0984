package conformance

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ktrace-dev/ktrace/internal/vmtest"
)

// pollScript runs testdata/poll/session.sh on the guest kernel's tracefs,
// then in a `ktrace --kernel host mount` with the live backend, where the
// guest has FUSE (built in on 6.12; a module the 6.1 guest lacks).
const pollScript = `cd /sys/kernel/tracing
echo @@KERNEL; sh /session.sh; echo @@END-KERNEL
if grep -q fuse /proc/filesystems; then
	mkdir -p /tmp/tr
	/bin/ktrace --kernel host mount --daemon /tmp/tr >/tmp/mpid 2>/tmp/m.err
	cd /tmp/tr
	echo @@KTRACE; sh /session.sh; echo @@END-KTRACE
	cd /
	kill $(cat /tmp/mpid); sleep 1
	echo @@MERR; cat /tmp/m.err; echo @@END-MERR
fi
`

// TestPollVM: poll(2) on a ktrace mount's trace_pipe and hist files
// (kprobe and static events, POLLIN and POLLPRI, waits ended by a hit)
// reports what the kernel's tracefs reports, step by step, in the same
// boot, in a guest with no /boot and no image. The kernel's own answers
// are also checked against the golden file recorded from it.
func TestPollVM(t *testing.T) {
	kt := vmtest.Ktrace(t)
	pl := vmtest.Binary(t, "./internal/vmtest/poll")
	dir := filepath.Join(filepath.Dir(corpusDir(t)), "poll")
	session, err := os.ReadFile(filepath.Join(dir, "session.sh"))
	if err != nil {
		t.Fatal(err)
	}
	vmtest.ForEachKernel(t, func(t *testing.T, k vmtest.Kernel) {
		ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
		defer cancel()
		out, err := vmtest.Run(ctx, k, vmtest.Guest{Script: pollScript, Files: map[string][]byte{
			"/bin/ktrace": kt,
			"/bin/poll":   pl,
			"/session.sh": session,
		}})
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		s := string(out)
		kern := section(s, "KERNEL")
		if golden, err := os.ReadFile(filepath.Join(dir, k.Name+".out")); err == nil && kern != string(golden) {
			t.Errorf("%s: the kernel's answers differ from %s.out (a timing step?):\n%s", k.Name, k.Name, kern)
		}
		if !strings.Contains(s, "@@KTRACE") {
			t.Logf("%s: no FUSE in the guest; the kernel's answers only", k.Name)
			return
		}
		if got := section(s, "KTRACE"); got != kern {
			t.Errorf("%s: poll on the mount differs from the kernel's tracefs:\nkernel:\n%s\nktrace:\n%s\nmount's stderr:\n%s", k.Name, kern, got, section(s, "MERR"))
		}
	})
}
