package live

import (
	"context"
	"testing"
	"time"

	"github.com/ktrace-dev/ktrace/internal/vmtest"
)

// pairScript is a script run twice in one guest, on the kernel's tracefs
// and under ktrace sh with the live backend; name prefixes its sections.
type pairScript struct{ name, text string }

// runPairs runs each script on kernel k's tracefs, then under /bin/ktrace
// (kt) in the same boot, and returns the guest's output: per script, the
// sections NAME+"KERNEL", NAME+"KTRACE" and NAME+"ERR" (ktrace's stderr).
func runPairs(t *testing.T, k vmtest.Kernel, kt []byte, scripts ...pairScript) string {
	t.Helper()
	var script string
	for _, sc := range scripts {
		script += "echo @@" + sc.name + "KERNEL\n" + sc.text + "echo @@END-" + sc.name + "KERNEL\n" +
			"echo @@" + sc.name + "KTRACE\n/bin/ktrace --kernel host sh -c " + vmtest.ShQuote(sc.text) + " 2>/tmp/sh.err\necho @@END-" + sc.name + "KTRACE\n" +
			"echo @@" + sc.name + "ERR; cat /tmp/sh.err; echo @@END-" + sc.name + "ERR\n"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	out, err := vmtest.Run(ctx, k, vmtest.Guest{Script: script, Files: map[string][]byte{"/bin/ktrace": kt}})
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	return string(out)
}
