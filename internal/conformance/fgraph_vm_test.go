package conformance

import (
	"regexp"
	"strings"
	"testing"

	"github.com/ktrace-dev/ktrace/internal/vmtest"
)

// graphWorkload runs the function_graph tracer over dd's reads, with the
// task column shown (funcgraph-proc) so that dd's lines can be told from
// the shell's.
const graphWorkload = `echo 'ksys_read vfs_read rw_verify_area' > set_ftrace_filter
echo 1 > options/funcgraph-proc
echo function_graph > current_tracer
dd if=/etc/hostname of=/dev/null bs=4 count=3 2>/dev/null
echo 0 > tracing_on
cat trace
echo nop > current_tracer; echo 1 > tracing_on
echo 0 > options/funcgraph-proc
echo > set_ftrace_filter
`

// graphLine is a function_graph line with the CPU and task columns: the
// task, the duration column and the call text (indentation kept).
var graphLine = regexp.MustCompile(`^ \d+\)\s+(\S+-\d+)\s+\| ([ +!#*@$] [0-9. ]+us +|              )\|  (.*)$`)

// TestFunctionGraphVM runs the function_graph tracer on each pinned
// kernel's tracefs and through ` + "`ktrace --kernel host sh`" + ` with the live backend
// (guests with no /boot and no image) over the same dd, and compares dd's
// calls as the two traces print them: the header, each line's call text
// and nesting, and which lines carry a duration.
func TestFunctionGraphVM(t *testing.T) {
	vmtest.ForEachKernel(t, func(t *testing.T, k vmtest.Kernel) {
		s := runKernelThenSh(t, k, graphWorkload)
		kern, ktr := section(s, "KERNEL"), section(s, "KTRACE")
		head := func(tr string) string {
			lines := strings.SplitN(tr, "\n", 5)
			return strings.Join(lines[:min(4, len(lines))], "\n")
		}
		if head(kern) != head(ktr) {
			t.Errorf("%s: header:\nkernel:\n%s\nktrace:\n%s", k.Name, head(kern), head(ktr))
		}
		kc, tc := ddCalls(kern), ddCalls(ktr)
		if len(kc) == 0 || strings.Join(kc, "\n") != strings.Join(tc, "\n") {
			t.Errorf("%s: dd's calls differ\nkernel:\n%s\nktrace:\n%s\nkernel trace:\n%s\nktrace trace:\n%s\nstderr:\n%s",
				k.Name, strings.Join(kc, "\n"), strings.Join(tc, "\n"), kern, ktr, section(s, "ERR"))
		}
		t.Logf("%s: %d lines of dd's calls, equal", k.Name, len(kc))
	})
}

// ddCalls are dd's lines of a graph trace from its first read on:
// whether the line has a duration, and the call text. (What comes before
// differs by shell: busybox sh runs its dd applet without an exec, ktrace
// sh execs /bin/dd, whose kernel_read calls rw_verify_area.)
func ddCalls(trace string) []string {
	var out []string
	for _, l := range strings.Split(trace, "\n") {
		m := graphLine.FindStringSubmatch(l)
		if m == nil || !strings.HasPrefix(m[1], "dd-") {
			continue
		}
		if len(out) == 0 && m[3] != "ksys_read() {" {
			continue
		}
		timed := "       "
		if strings.Contains(m[2], "us") {
			timed = "(timed)"
		}
		out = append(out, timed+" "+m[3])
	}
	return out
}
