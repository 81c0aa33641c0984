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

// stackScript runs testdata/stack/filters.sh on the guest kernel's
// tracefs and then on ktrace with the live backend (a mount where the
// guest has FUSE, else `ktrace sh`), then tracer.sh, which switches the
// kernel's stack tracer on and off through its sysctl, on each in turn.
const stackScript = `cd /sys/kernel/tracing
echo @@KERNEL; sh /filters.sh; echo @@END-KERNEL
if grep -q fuse /proc/filesystems; then
	mkdir -p /tmp/tr
	/bin/ktrace --kernel host mount --daemon /tmp/tr >/tmp/mpid 2>/tmp/m.err
	kt() { (cd /tmp/tr && sh "$1" 2>&1); }
else
	kt() { /bin/ktrace --kernel host sh "$1" 2>&1 | grep -v '^ktrace: probe backend'; }
fi
echo @@KTRACE; kt /filters.sh; echo @@END-KTRACE
echo @@KTRACER; sh /tracer.sh; echo @@END-KTRACER
echo @@LTRACER; kt /tracer.sh; echo @@END-LTRACER
if [ -s /tmp/mpid ]; then kill $(cat /tmp/mpid); sleep 1; fi
echo @@MERR; cat /tmp/m.err 2>/dev/null; echo @@END-MERR
`

// TestStackTracerVM: with the live backend, ktrace's stack_trace,
// stack_max_size and stack_trace_filter are the running kernel's (the
// tracer is switched by /proc/sys/kernel/stack_tracer_enabled, which no
// tracefs sees), in a guest with no /boot and no image: the files' writes,
// errors and readback through a mount (6.12) or `ktrace sh` (6.1) are the
// kernel's tracefs's, and the kernel's tracer, switched on, measures the
// stack the filter selects. The kernel's answers are also checked against
// the golden files TestGoldenScriptsSh holds the emulation to.
func TestStackTracerVM(t *testing.T) {
	kt := vmtest.Ktrace(t)
	dir := filepath.Join(filepath.Dir(corpusDir(t)), "stack")
	read := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	filters, tracer := read("filters.sh"), read("tracer.sh")
	vmtest.ForEachKernel(t, func(t *testing.T, k vmtest.Kernel) {
		ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
		defer cancel()
		out, err := vmtest.Run(ctx, k, vmtest.Guest{Script: stackScript, Files: map[string][]byte{
			"/bin/ktrace": kt,
			"/filters.sh": filters,
			"/tracer.sh":  tracer,
		}})
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		s := string(out)
		kern := section(s, "KERNEL")
		if golden := string(read(k.Name + ".out")); kern != golden {
			t.Errorf("%s: the kernel's answers differ from %s.out:\n%s", k.Name, k.Name, kern)
		}
		if got := section(s, "KTRACE"); got != kern {
			t.Errorf("%s: the stack tracer's files through ktrace differ from the kernel's tracefs:\nkernel:\n%s\nktrace:\n%s\nmount's stderr:\n%s", k.Name, kern, got, section(s, "MERR"))
		}
		ktr, ltr := section(s, "KTRACER"), section(s, "LTRACER")
		for _, want := range []string{"max > 0", "one line per entry", "deepest at ksys_read", "depth of entry 0 is the max"} {
			if !strings.Contains(ktr, want+"\n") {
				t.Errorf("%s: the kernel's stack tracer did not show %q:\n%s", k.Name, want, ktr)
			}
		}
		if ltr != ktr {
			t.Errorf("%s: the stack tracer through ktrace differs from the kernel's tracefs:\nkernel:\n%s\nktrace:\n%s", k.Name, ktr, ltr)
		}
	})
}
