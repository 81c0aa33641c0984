package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/ktrace-dev/ktrace/internal/vmtest"
)

// recordHistWorkload writes with dd in a few sizes, several of them once
// (entries that sort equal).
const recordHistWorkload = `for b in 512 512 700 800 900 4000 5000 5000; do dd if=/dev/zero of=/tmp/z bs=$b count=2 2>/dev/null; done`

// recordHistTriggers are the hist triggers both runs set on demo/w.
var recordHistTriggers = []string{
	`hist:keys=count.log2:sort=count if comm == "dd"`,
	`hist:keys=count:vals=count if comm == "dd"`,
	`hist:keys=count.buckets=1000:vals=hitcount:sort=hitcount.descending,count if comm == "dd" && count > 100`,
}

// TestRecordHistVM sets hist triggers on a kprobe event through the
// kernel's tracefs and through `ktrace record --trigger`, runs the same
// workload under each, and wants ktrace's hist file to be the kernel's.
func TestRecordHistVM(t *testing.T) {
	kt := vmtest.Ktrace(t)
	var kernel, record strings.Builder
	kernel.WriteString("cd /sys/kernel/tracing\necho 'p:demo/w vfs_write count=%dx:u64' >> kprobe_events\n")
	record.WriteString("/bin/ktrace record 'p:demo/w vfs_write count=%dx:u64' --filter 'count > 1000000000'")
	for _, tr := range recordHistTriggers {
		kernel.WriteString("echo " + vmtest.ShQuote(tr) + " >> events/demo/w/trigger\n")
		record.WriteString(" --trigger " + vmtest.ShQuote("demo/w:"+tr))
	}
	kernel.WriteString(recordHistWorkload + "\ncat events/demo/w/hist\necho > events/demo/w/trigger 2>/dev/null\necho > kprobe_events\ncd /\n")
	record.WriteString(" -- sh -c " + vmtest.ShQuote(recordHistWorkload) + " 2>/tmp/e\n")
	vmtest.ForEachKernel(t, func(t *testing.T, k vmtest.Kernel) {
		script := "printf '@@%s\\n' KERNEL\n" + kernel.String() + "printf '@@%s\\n' END-KERNEL\n" +
			"printf '@@%s\\n' KTRACE\n" + record.String() + "printf '@@%s\\n' END-KTRACE\ncat /tmp/e\n"
		ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
		defer cancel()
		out, err := vmtest.Run(ctx, k, vmtest.Guest{Script: script, Files: map[string][]byte{"/bin/ktrace": kt}})
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		s := string(out)
		want := vmSection(s, "KERNEL")
		if !strings.Contains(want, "Hits: 16") {
			t.Fatalf("the kernel's histogram did not count the workload (test premise):\n%s", s)
		}
		got, ok := strings.CutPrefix(vmSection(s, "KTRACE"), "# events/demo/w/hist\n")
		if !ok || got != want {
			t.Errorf("record --trigger's hist file:\n%s\nkernel's:\n%s\nstderr:\n%s", vmSection(s, "KTRACE"), want, s)
		}
	})
}
