package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/ktrace-dev/ktrace/internal/vmtest"
)

// profileScript defines an event, lets it hit, removes it and defines it
// again, printing kprobe_profile after each step: on the kernel the
// re-created event starts from 0 hits, even when it gets the old ID.
const profileScript = `echo 'p:myevent vfs_read' >> kprobe_events
echo 1 > events/kprobes/myevent/enable
read x < /proc/version; read x < /proc/version
echo 0 > events/kprobes/myevent/enable
printf '@@%s\n' HITS; cat kprobe_profile; printf '@@%s\n' END-HITS
echo '-:myevent' >> kprobe_events
echo 'p:myevent vfs_read' >> kprobe_events
printf '@@%s\n' AFTER; cat events/kprobes/myevent/id; cat kprobe_profile; printf '@@%s\n' END-AFTER
echo > kprobe_events
`

// TestProfileLiveVM runs profileScript on each pinned kernel's tracefs and
// through ktrace sh with the live backend, and requires the same
// kprobe_profile (and event ID) at the end: 0 hits for the new event.
func TestProfileLiveVM(t *testing.T) {
	kt := vmtest.Ktrace(t)
	vmtest.ForEachKernel(t, func(t *testing.T, k vmtest.Kernel) {
		script := "printf '@@%s\\n' KERNEL\n" + profileScript + "printf '@@%s\\n' END-KERNEL\n" +
			"printf '@@%s\\n' KTRACE\n/bin/ktrace --kernel host sh -c " + vmtest.ShQuote(profileScript) + " 2>/tmp/e\nprintf '@@%s\\n' END-KTRACE\ncat /tmp/e\n"
		ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
		defer cancel()
		out, err := vmtest.Run(ctx, k, vmtest.Guest{Script: script, Files: map[string][]byte{"/bin/ktrace": kt}})
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		s := string(out)
		kern, kt := vmSection(s, "KERNEL"), vmSection(s, "KTRACE")
		for _, run := range []struct{ name, out string }{{"kernel", kern}, {"ktrace", kt}} {
			f := strings.Fields(vmSection(run.out, "HITS"))
			if len(f) != 3 || f[0] != "myevent" || f[1] == "0" {
				t.Fatalf("%s: no hits before the event was removed (test premise):\n%s", run.name, s)
			}
		}
		if got, want := vmSection(kt, "AFTER"), vmSection(kern, "AFTER"); got != want {
			t.Errorf("event ID and kprobe_profile after re-creating the event:\nktrace:\n%s\nkernel:\n%s", got, want)
		}
	})
}
