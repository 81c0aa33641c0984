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
		kc, tc := ddCalls(kern, "ksys_read() {"), ddCalls(ktr, "ksys_read() {")
		if len(kc) == 0 || strings.Join(kc, "\n") != strings.Join(tc, "\n") {
			t.Errorf("%s: dd's calls differ\nkernel:\n%s\nktrace:\n%s\nkernel trace:\n%s\nktrace trace:\n%s\nstderr:\n%s",
				k.Name, strings.Join(kc, "\n"), strings.Join(tc, "\n"), kern, ktr, section(s, "ERR"))
		}
		t.Logf("%s: %d lines of dd's calls, equal", k.Name, len(kc))
	})
}

// ddCalls are dd's lines of a graph trace from its first line of call
// text first on (its first read): whether the line has a duration, and
// the call text. (What comes before differs by shell: busybox sh runs
// its dd applet without an exec, ktrace sh execs /bin/dd, whose
// kernel_read calls rw_verify_area.)
func ddCalls(trace, first string) []string {
	var out []string
	for _, l := range strings.Split(trace, "\n") {
		m := graphLine.FindStringSubmatch(l)
		if m == nil || !strings.HasPrefix(m[1], "dd-") {
			continue
		}
		if len(out) == 0 && m[3] != first {
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

// graphFilterWorkload runs the function_graph tracer over dd's reads
// three times, changing its settings while it runs: set_graph_function
// on vfs_read, then set_graph_notrace on rw_verify_area, then
// max_graph_depth 2.
const graphFilterWorkload = `echo 'ksys_read vfs_read rw_verify_area security_file_permission' > set_ftrace_filter
echo 1 > options/funcgraph-proc
echo vfs_read > set_graph_function
echo function_graph > current_tracer
dd if=/etc/hostname of=/dev/null bs=4 count=3 2>/dev/null
echo 0 > tracing_on
echo @@PART graph; cat trace; echo > trace
echo > set_graph_function
echo rw_verify_area > set_graph_notrace
echo 1 > tracing_on
dd if=/etc/hostname of=/dev/null bs=4 count=3 2>/dev/null
echo 0 > tracing_on
echo @@PART notrace; cat trace; echo > trace
echo > set_graph_notrace
echo 2 > max_graph_depth
echo 1 > tracing_on
dd if=/etc/hostname of=/dev/null bs=4 count=3 2>/dev/null
echo 0 > tracing_on
echo @@PART depth; cat trace
echo @@PART end
echo nop > current_tracer; echo 1 > tracing_on
echo 0 > max_graph_depth; echo 0 > options/funcgraph-proc
echo > set_ftrace_filter
`

// TestGraphFilterVM runs the function_graph tracer under
// set_graph_function, set_graph_notrace and max_graph_depth, changed
// while it runs, on each pinned kernel's tracefs and through `ktrace
// --kernel host sh` with the live backend, and compares dd's calls as
// the two traces print them (the first starting at vfs_read, the others
// at ksys_read). The files' parsing is TestGoldenScriptsSh's.
func TestGraphFilterVM(t *testing.T) {
	vmtest.ForEachKernel(t, func(t *testing.T, k vmtest.Kernel) {
		s := runKernelThenSh(t, k, graphFilterWorkload)
		kern, ktr := section(s, "KERNEL"), section(s, "KTRACE")
		part := func(tr, name string) string {
			_, rest, _ := strings.Cut(tr, "@@PART "+name+"\n")
			body, _, _ := strings.Cut(rest, "@@PART ")
			return body
		}
		for _, p := range []struct{ name, first string }{
			{"graph", "vfs_read() {"},
			{"notrace", "ksys_read() {"},
			{"depth", "ksys_read() {"},
		} {
			kc, tc := ddCalls(part(kern, p.name), p.first), ddCalls(part(ktr, p.name), p.first)
			if len(kc) == 0 || strings.Join(kc, "\n") != strings.Join(tc, "\n") {
				t.Errorf("%s: %s: dd's calls differ\nkernel:\n%s\nktrace:\n%s\nkernel trace:\n%s\nktrace trace:\n%s\nstderr:\n%s",
					k.Name, p.name, strings.Join(kc, "\n"), strings.Join(tc, "\n"), part(kern, p.name), part(ktr, p.name), section(s, "ERR"))
				continue
			}
			t.Logf("%s: %s: %d lines of dd's calls, equal", k.Name, p.name, len(kc))
		}
	})
}
