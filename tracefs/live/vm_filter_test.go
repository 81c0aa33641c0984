package live

import (
	"context"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/ktrace-dev/ktrace/internal/vmtest"
)

// filterScript sets filters on five events, runs a dd workload, changes
// one filter while its event is enabled, runs more, and prints the trace,
// the filter files, and what a bad filter leaves. It runs as is on the
// kernel's tracefs and under `ktrace sh`, whose events run their filters
// in their eBPF programs. The filters use every string match the eBPF
// stage compiles (whole, prefix, infix, suffix), signed and unsigned
// numbers, comm and its globs ('?', classes, a star inside), globs and
// infix patterns on probe strings (followed in a bpf_loop), ! and ||.
const filterScript = `echo 'p:kprobes/fo do_sys_openat2 dfd=%di:s32 path=+0(%si):string' >> kprobe_events
echo 'p:kprobes/fm do_sys_openat2 path=+0(%si):string' >> kprobe_events
echo 'p:kprobes/fe do_sys_openat2 path=+0(%si):string' >> kprobe_events
echo 'r:kprobes/fr do_sys_openat2 ret=$retval:s64' >> kprobe_events
echo 'p:kprobes/fw vfs_write count=%dx:u64' >> kprobe_events
echo 'p:kprobes/fg vfs_write count=%dx:u64' >> kprobe_events
echo 'p:kprobes/fp do_sys_openat2 path=+0(%si):string' >> kprobe_events
echo 'p:kprobes/fq do_sys_openat2 path=+0(%si):string' >> kprobe_events
echo 'p:kprobes/fh vfs_write count=%dx:u64' >> kprobe_events
echo 'comm == "dd" && path ~ "/etc/*"' > events/kprobes/fo/filter
echo 'comm ~ "*d*" && !(path != "/etc/hostname")' > events/kprobes/fm/filter
echo 'comm ~ "d*" && path ~ "*wd"' > events/kprobes/fe/filter
echo 'comm == "dd" && ret < 0' > events/kprobes/fr/filter
echo 'comm == "dd" && (count == 7 || count >= 2000)' > events/kprobes/fw/filter
echo 'comm ~ "d?" && count == 7 || comm ~ "[c-e][!x]*" && count == 4000 || comm ~ "*[[]*" ' > events/kprobes/fg/filter
echo 'comm == "dd" && (path ~ "/e?c/[g-p]*" || path ~ "*/[!e]*/nonexist*")' > events/kprobes/fp/filter
echo 'comm == "dd" && path ~ "*ss*" && !(path ~ "*st*")' > events/kprobes/fq/filter
echo 'comm ~ "d*d" && count < 100 || comm ~ "\\d[d]" && count == 2000' > events/kprobes/fh/filter
echo 1 > events/kprobes/enable
dd if=/etc/hostname of=/dev/null bs=7 count=1 2>/dev/null
dd if=/etc/passwd of=/dev/null 2>/dev/null
dd if=/nonexistent of=/dev/null 2>/dev/null
dd if=/dev/zero of=/dev/null bs=2000 count=2 2>/dev/null
echo 'path == "/etc/group" || dfd > 0' > events/kprobes/fo/filter
dd if=/etc/group of=/dev/null 2>/dev/null
dd if=/etc/passwd of=/dev/null 2>/dev/null
echo 0 > events/kprobes/enable
echo @@TRACE; cat trace; echo @@END-TRACE
echo @@FILTERS; cat events/kprobes/fo/filter events/kprobes/fw/filter events/kprobes/fg/filter events/kprobes/fh/filter events/kprobes/fp/filter events/kprobes/fq/filter; echo @@END-FILTERS
echo > error_log
echo 'count >' > events/kprobes/fw/filter
echo @@BAD; cat events/kprobes/fw/filter; cat error_log; echo @@END-BAD
echo > trace
echo > kprobe_events
`

// traceEvent is a trace line's task and event part: "dd fo: (...) path=...".
var traceEvent = regexp.MustCompile(`(?m)^ *(\S+)-\d+ +\[\d+\] \S+ +\d+\.\d+: (.*)$`)

func traceEvents(trace string) []string {
	var out []string
	for _, m := range traceEvent.FindAllStringSubmatch(trace, -1) {
		out = append(out, m[1]+" "+m[2])
	}
	return out
}

// errorLogTS is an error_log entry's timestamp.
var errorLogTS = regexp.MustCompile(`(?m)^\[ *\d+\.\d+\] `)

// TestFilterLiveVM runs filterScript on each pinned kernel's tracefs and
// under `ktrace sh` with the live backend, in the same boot, and wants
// the same events in the trace (task and event text), the same filter
// files and the same error for a bad filter.
func TestFilterLiveVM(t *testing.T) {
	vmtest.Require(t)
	ks, err := vmtest.PinnedKernels()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	kt, err := vmtest.BuildStatic(ctx, "./cmd/ktrace")
	if err != nil {
		t.Fatal(err)
	}
	quoted := "'" + strings.ReplaceAll(filterScript, "'", `'\''`) + "'"
	for _, k := range ks {
		t.Run(k.Name, func(t *testing.T) {
			script := "echo @@KERNEL\n" + filterScript + "echo @@END-KERNEL\n" +
				"echo @@KTRACE\n/bin/ktrace --kernel host sh -c " + quoted + " 2>/tmp/sh.err; echo \"@@RC $?\"\necho @@END-KTRACE\n" +
				"echo @@ERR; cat /tmp/sh.err; echo @@END-ERR\n"
			out, err := vmtest.Run(ctx, k, vmtest.Guest{
				Script: script,
				Files: map[string][]byte{
					"/bin/ktrace":   kt,
					"/etc/hostname": []byte("ktrace-vm\n"),
					"/etc/passwd":   []byte("root:x:0:0:root:/root:/bin/sh\n"),
					"/etc/group":    []byte("root:x:0:\n"),
				},
			})
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			s := string(out)
			kern, kt := section(s, "KERNEL"), section(s, "KTRACE")
			if !strings.Contains(kt, "@@RC 0") {
				t.Fatalf("ktrace sh failed:\n%s\nstderr:\n%s", kt, section(s, "ERR"))
			}
			// The events as a multiset: which hits pass is the filters'
			// work; the order of probes on one address is the tracer's.
			want, got := traceEvents(section(kern, "TRACE")), traceEvents(section(kt, "TRACE"))
			sort.Strings(want)
			sort.Strings(got)
			if len(want) < 6 {
				t.Fatalf("the kernel's trace has %d events, want the workload's (test premise):\n%s", len(want), section(kern, "TRACE"))
			}
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("trace events:\n%s\nkernel's:\n%s\nstderr:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"), section(s, "ERR"))
			}
			for _, sec := range []string{"FILTERS", "BAD"} {
				w, g := errorLogTS.ReplaceAllString(section(kern, sec), ""), errorLogTS.ReplaceAllString(section(kt, sec), "")
				if g != w {
					t.Errorf("%s:\n%s\nkernel's:\n%s", sec, g, w)
				}
			}
			t.Logf("%s: %d filtered events agree:\n%s", k.Name, len(want), strings.Join(want, "\n"))
		})
	}
}

func section(out, name string) string {
	_, rest, ok := strings.Cut(out, "@@"+name+"\n")
	if !ok {
		return ""
	}
	body, _, _ := strings.Cut(rest, "@@END-"+name)
	return body
}
