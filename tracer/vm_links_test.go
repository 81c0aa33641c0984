package tracer

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ktrace-dev/ktrace/internal/vmtest"
)

// TestLinkTypesVM checks which links ktrace record attaches with, as the
// running kernel lists them in the recorder's /proc/PID/fdinfo: on 6.12 a
// uprobe and a uretprobe through uprobe-multi links, and a kprobe and a
// kretprobe at function entries through kprobe-multi links (the kernel
// names both kprobe_multi); on 6.1, which has neither, perf event links.
// The guest mounts debugfs, as most hosts do: a kprobe goes through a
// kprobe-multi link only where the kprobe blacklist is known, since the
// link does not check it and the kernel's kprobe would.
func TestLinkTypesVM(t *testing.T) {
	kt, wl := guestBinaries(t)
	write := fileOffset(t, wl, "syscall.write")
	vmtest.ForEachKernel(t, func(t *testing.T, k vmtest.Kernel) {
		var sc strings.Builder
		sc.WriteString("mount -t debugfs debugfs /sys/kernel/debug\n")
		for _, l := range []string{
			fmt.Sprintf("p:u/a /bin/workload:0x%x", write),
			fmt.Sprintf("r:u/a /bin/workload:0x%x", write),
			"p:k/a vfs_read",
			"r:k/a vfs_read",
		} {
			fmt.Fprintf(&sc, "echo @@%s; /bin/ktrace --kernel host record %s -- sh -c 'grep -h link_type /proc/$PPID/fdinfo/* | sort -u' 2>/dev/null | grep link_type; echo @@END-%s\n", l[:1]+l[2:3], vmtest.ShQuote(l), l[:1]+l[2:3])
		}
		ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
		defer cancel()
		out, err := vmtest.Run(ctx, k, vmtest.Guest{Script: sc.String(), Files: map[string][]byte{"/bin/ktrace": kt, "/bin/workload": wl}})
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		want := map[string]string{"pu": "uprobe_multi", "ru": "uprobe_multi", "pk": "kprobe_multi", "rk": "kprobe_multi"}
		if k.Name == "6.1" {
			want = map[string]string{"pu": "perf", "ru": "perf", "pk": "perf", "rk": "perf"}
		}
		for sec, typ := range want {
			if got := strings.TrimSpace(section(string(out), sec)); got != "link_type:\t"+typ {
				t.Errorf("%s: %s: links %q, want %s", k.Name, sec, got, typ)
			}
		}
	})
}
