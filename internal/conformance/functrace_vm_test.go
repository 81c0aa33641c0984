package conformance

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/ktrace-dev/ktrace/internal/vmtest"
)

// funcWorkload runs the function tracer over a few functions with their
// addresses shown (sym-offset, sym-addr), while dd copies a file; tracing
// is off again before trace is read (reading it calls vfs_read).
const funcWorkload = `echo 'vfs_read ksys_read vfs_write ksys_write' > set_ftrace_filter
echo 1 > options/sym-offset; echo 1 > options/sym-addr
echo function > current_tracer
dd if=/etc/hostname of=/dev/null bs=4 2>/dev/null
echo 0 > tracing_on
cat trace
echo nop > current_tracer; echo 1 > tracing_on
echo 0 > options/sym-offset; echo 0 > options/sym-addr
echo > set_ftrace_filter
`

// TestFunctionTraceVM runs the function tracer on each pinned kernel's
// tracefs and through `ktrace --kernel host sh` with the live backend
// (guests with no /boot and no image), over the same workload, and
// compares the entries after the context columns, addresses included
// ("vfs_read+0x4/0x370 <ffffffff8143f694> <-ksys_read+0x6f/0xf0 <...>"):
// every entry ktrace prints is one the kernel printed, and dd's read and
// write paths are in both.
func TestFunctionTraceVM(t *testing.T) {
	vmtest.ForEachKernel(t, func(t *testing.T, k vmtest.Kernel) {
		s := runKernelThenSh(t, k, funcWorkload)
		kern, ktr := funcEntries(section(s, "KERNEL")), funcEntries(section(s, "KTRACE"))
		for l := range ktr {
			if !kern[l] {
				t.Errorf("%s: ktrace printed an entry the kernel did not: %s", k.Name, l)
			}
		}
		for _, fn := range []string{"vfs_read+", "ksys_read+", "vfs_write+", "ksys_write+"} {
			inK, inT := false, false
			for l := range kern {
				inK = inK || strings.HasPrefix(l, fn)
			}
			for l := range ktr {
				inT = inT || strings.HasPrefix(l, fn)
			}
			if !inK || !inT {
				t.Errorf("%s: %s entries: kernel %v, ktrace %v\nkernel:\n%s\nktrace:\n%s", k.Name, fn, inK, inT, section(s, "KERNEL"), section(s, "KTRACE"))
			}
		}
		t.Logf("%s: %d distinct function entries from ktrace, the kernel's %d, addresses included", k.Name, len(ktr), len(kern))
	})
}

// runKernelThenSh runs workload (a tracefs script) in a guest of k,
// first on the kernel's tracefs, then through `ktrace --kernel host sh`
// with the live backend, each after a clear of the trace, and returns the
// guest's output: the kernel's run between @@KERNEL and @@END-KERNEL,
// ktrace's between @@KTRACE and @@END-KTRACE, ktrace's stderr between
// @@ERR and @@END-ERR. It fails the test when the guest or ktrace does.
func runKernelThenSh(t *testing.T, k vmtest.Kernel, workload string) string {
	t.Helper()
	script := "echo > trace\n{\n" + workload + "} > /tmp/k.trace\n" +
		"echo > trace\n/bin/ktrace --kernel host sh /w.sh > /tmp/kt.trace 2>/tmp/kt.err; echo \"@@RC $?\"\n" +
		"echo @@KERNEL; cat /tmp/k.trace; echo @@END-KERNEL\necho @@KTRACE; cat /tmp/kt.trace; echo @@END-KTRACE\necho @@ERR; cat /tmp/kt.err; echo @@END-ERR\n"
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	out, err := vmtest.Run(ctx, k, vmtest.Guest{Script: script, Files: map[string][]byte{
		"/bin/ktrace":   vmtest.Ktrace(t),
		"/w.sh":         []byte(workload),
		"/etc/hostname": []byte("ktrace-vm\n"),
	}})
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	s := string(out)
	if !strings.Contains(s, "@@RC 0") {
		t.Fatalf("ktrace sh failed:\n%s", s)
	}
	return s
}

// funcEntries are a function trace's entries after the context columns.
func funcEntries(trace string) map[string]bool {
	out := map[string]bool{}
	for _, l := range strings.Split(trace, "\n") {
		if strings.HasPrefix(l, "#") {
			continue
		}
		if loc := staticCtx.FindStringIndex(l); loc != nil {
			out[l[loc[1]:]] = true
		}
	}
	return out
}
