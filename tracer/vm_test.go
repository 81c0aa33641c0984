package tracer

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ktrace-dev/ktrace/internal/vmtest"
)

// traceDef is one event definition of the VM comparison corpus.
type traceDef struct {
	line string
	// kernels lists the pinned kernels whose own tracer accepts the line
	// (checked in the VM; the rest is 6.12-only syntax that ktrace brings
	// to 6.1).
	kernels []string
	// cross marks definitions whose values do not depend on the kernel
	// build: where the kernel itself rejects the line, ktrace's output on
	// that kernel is compared with the 6.12 kernel's for the same workload.
	cross bool
	// skip lists the kernels where ktrace does not run the line either (t
	// events before 6.5's __probestub_ functions have no prototype to type
	// their arguments).
	skip []string
}

var both = []string{"6.1", "6.12"}
var only612 = []string{"6.12"}

// traceDefs covers the fetch-arg kinds and types on the workload's calls
// (see internal/vmtest/workload), avoiding values that differ between
// hits for reasons of their own (pointers, times).
var traceDefs = []traceDef{
	// Registers, user memory through kernel reads (x86's user fallback),
	// kernel memory of the on-stack struct open_how.
	{line: `p:t_open do_sys_openat2 dfd=%di:s32 path=+0(%si):string flags=+0(%dx):x64 mode=+8(%dx):u16`, kernels: both, cross: true},
	// ustring, +u derefs, every integer type.
	{line: `p:t_user do_sys_openat2 u=+0(%si):ustring v=+u0(%si):string a=+u0(%si):u8 b=+u1(%si):s8 c=+u0(%si):x16 d=+u0(%si):s16 e=+u0(%si):u32 f=+u0(%si):x32 g=+u0(%si):s32 h=+u0(%si):u64 i=+u0(%si):s64 j=+u0(%si):x8`, kernels: both, cross: true},
	// $comm, immediates, immediate strings.
	{line: `p:t_imm do_sys_openat2 comm=$comm s=\"lit" i=\123 n=\-5:s32 x=\0x10:x16 m=$COMM`, kernels: both, cross: true},
	// $argN at entry, derefs of it, arrays of numbers and chars.
	{line: `p:t_args do_sys_openat2 a1=$arg1:s32 a2=+0($arg2):string arr=+0($arg2):u8[4] xs=+1($arg2):x8[3]`, kernels: both, cross: true},
	{line: `p:t_char do_sys_openat2 c=+0($arg2):char cs=+5($arg2):char[3]`, kernels: only612, cross: true},
	// Return values.
	{line: `r:t_ret do_sys_openat2 ret=$retval:s64 r32=$retval:s32 rx=$retval:x8`, kernels: both, cross: true},
	{line: `r:t_rread vfs_read ret=$retval:s64`, kernels: both, cross: true},
	// $argN on a return probe (entry data).
	{line: `r:t_rargs vfs_read ret=$retval:s64 count=$arg3:u64`, kernels: only612, cross: true},
	// Bitfields.
	{line: `p:t_bf vfs_read count=%dx:u64 b=%dx:b4@1/32 hi=%dx:b3@4/8`, kernels: both, cross: true},
	// Faults: a string behind a bad pointer, a deref chain that faults.
	{line: `p:t_fault do_sys_openat2 f=+0(+0(%si)):string`, kernels: both, cross: true},
	{line: `p:t_fault2 do_sys_openat2 g=+0(+0(+0(%si))):string`, kernels: both, cross: true},
	// @SYM and a string at a symbol.
	{line: `p:t_sym vfs_write w=@linux_banner:u64 c=%dx:u32`, kernels: both, cross: false},
	// The stack: the return address at entry, shown as a symbol.
	{line: `p:t_stack vfs_read ra=$stack0:symbol`, kernels: both, cross: false},
	// BTF names, field chains, $arg*, %pD (6.12 syntax).
	{line: `p:t_btf vfs_read count flags=file->f_flags:x32 name=file->f_path.dentry->d_name.name:string`, kernels: only612, cross: true},
	{line: `p:t_pd vfs_write file:%pD count`, kernels: only612, cross: true},
	{line: `p:t_star do_sys_openat2 $arg*`, kernels: only612, cross: false},
	{line: `r:t_rbtf vfs_read $retval file->f_flags:x32`, kernels: only612, cross: true},
	// symstr through ktrace only: the 6.12.95 kernel's own symstr on this
	// line oopses in kallsyms_lookup_buildid, which writes past the end of
	// the record (seen in the VM); the test checks symstr == "symbol".
	{line: `p:t_symstr vfs_read ops=file->f_op:symstr fop=file->f_op:symbol`},
	// fprobes (dynamic_events f lines exist on 6.12 only).
	{line: `f:t_fent do_sys_openat2 dfd fn=+0(filename):ustring`, kernels: only612, cross: true},
	{line: `f:t_fexit do_sys_openat2%return $retval dfd`, kernels: only612, cross: true},
	// fprobes of one shape on several functions: on 6.12 one shared
	// program and one kprobe-multi (kretprobe-multi) link serve them all,
	// the attach cookie naming the event.
	{line: `f:t_fs1 vfs_read c=$comm n=$arg3:u64`, kernels: only612, cross: true},
	{line: `f:t_fs2 vfs_write c=$comm n=$arg3:u64`, kernels: only612, cross: true},
	{line: `f:t_fs3 ksys_read c=$comm n=$arg3:u64`, kernels: only612, cross: true},
	{line: `f:t_fx1 vfs_read%return r=$retval:s64`, kernels: only612, cross: true},
	{line: `f:t_fx2 vfs_write%return r=$retval:s64`, kernels: only612, cross: true},
	// kprobes of one shape at function entries: on 6.12 they share a
	// program and a kprobe-multi link as well.
	{line: `p:t_ps1 vfs_read c=$comm n=%dx:u64 fl=+0(%di):x32`, kernels: both, cross: true},
	{line: `p:t_ps2 vfs_write c=$comm n=%dx:u64 fl=+0(%di):x32`, kernels: both, cross: true},
	// kretprobes of one shape: on 6.12 one program and one
	// kretprobe-multi link, whose handler sees the return's registers
	// with %ip at the return address, as a kretprobe's does.
	{line: `r:t_rs1 vfs_read r=$retval:s64 ip=%ip:x64 c=$comm`, kernels: both, cross: true},
	{line: `r:t_rs2 vfs_write r=$retval:s64 ip=%ip:x64 c=$comm`, kernels: both, cross: true},
	// t events (6.12): the tracepoint's arguments by BTF name and $argN.
	{line: `t:t_exec sched_process_exec comm=p->comm:string old=old_pid:s32 file=bprm->filename:string argc=$arg3`, kernels: only612, skip: []string{"6.1"}},
	// A kretprobe with an explicit maxactive (tracefs fallback).
	{line: `r8:t_rmax vfs_write ret=$retval:s64`, kernels: both, cross: true},
}

func (d traceDef) event() string {
	s := strings.Fields(d.line)[0]
	_, name, _ := strings.Cut(s, ":")
	return name
}

// uprobe reports whether the line is a uprobe: its place is PATH:OFFSET.
func (d traceDef) uprobe() bool {
	f := strings.Fields(d.line)
	return len(f) > 1 && strings.HasPrefix(f[1], "/")
}

func (d traceDef) kernelAccepts(k string) bool {
	for _, x := range d.kernels {
		if x == k {
			return true
		}
	}
	return false
}

// traceLine splits a trace line into comm, event and the body after the
// probe's "(ip)".
var traceLine = regexp.MustCompile(`^\s*(.*)-(\d+)\s+\[(\d+)\]\s+\S+\s+([\d.]+): (\w+): \((.*?)\)(.*)$`)

// hit is one trace line of an event: its timestamp (both tracers stamp a
// hit with the same clock reading), the "(ip)" part and the body.
type hit struct{ ts, ip, body string }

// parseTrace returns the hits of the processes named comm per event, in
// order. A process is taken by its pid with every line of that pid, so
// that what it did before exec under its parent's name counts too: the
// kernel names every line of a pid by the pid's latest comm, ktrace by the
// comm at the hit.
func parseTrace(text, comm string) map[string][]hit {
	out := map[string][]hit{}
	lines := strings.Split(text, "\n")
	pids := map[string]bool{}
	for _, l := range lines {
		if m := traceLine.FindStringSubmatch(l); m != nil && strings.TrimSpace(m[1]) == comm {
			pids[m[2]] = true
		}
	}
	for _, l := range lines {
		m := traceLine.FindStringSubmatch(l)
		if m == nil || !pids[m[2]] {
			continue
		}
		out[m[5]] = append(out[m[5]], hit{ts: m[4], ip: m[6], body: m[7]})
	}
	return out
}

// sectionCmd prints cmd's output between "@@NAME" and "@@END-NAME"
// lines. The markers are built by printf so that the script's own text,
// which the probes may read from the shell's buffers and print as string
// arguments, never contains them.
func sectionCmd(name, cmd string) string {
	return fmt.Sprintf("printf '@@%%s\\n' %s; %s; printf '@@END-%%s\\n' %s\n", name, cmd, name)
}

// section returns the text between "@@NAME" and "@@END-NAME" markers.
func section(out, name string) string {
	_, rest, ok := strings.Cut(out, "@@"+name+"\n")
	if !ok {
		return ""
	}
	body, _, _ := strings.Cut(rest, "@@END-"+name)
	return body
}

// guestBinaries returns ktrace's and the workload's static binaries, once
// VM tests can run here (they are skipped before anything is built).
func guestBinaries(t *testing.T) ([]byte, []byte) {
	t.Helper()
	vmtest.Require(t)
	return vmtest.Ktrace(t), vmtest.Binary(t, "./internal/vmtest/workload")
}

func shQuote(s string) string { return vmtest.ShQuote(s) }

// bootRun is what one boot of a pinned kernel produced.
type bootRun struct {
	kernel     map[string][]hit // the kernel's own tracer, by event
	ktrace     map[string][]hit // ktrace record, by event
	raw        string
	kernelText string
	ktraceText string
	summary    string
}

// runTraceBoot boots kernel k, defines the kernel-accepted lines in its
// kprobe_events / dynamic_events, enables them, and runs the workload
// under ktrace record with every line, both tracers attached at once.
func runTraceBoot(t *testing.T, k vmtest.Kernel, defs []traceDef, recordFlags ...string) *bootRun {
	t.Helper()
	kt, wl := guestBinaries(t)
	var sc strings.Builder
	// A ring big enough for every hit of every process while both
	// tracers run: the default 1.4 MB overflows with a few dozen probes
	// on hot functions, and an overwritten page loses the oldest hits.
	sc.WriteString("echo 0 > tracing_on\necho 16384 > buffer_size_kb\n")
	for _, d := range defs {
		if !d.kernelAccepts(k.Name) {
			continue
		}
		file := "kprobe_events"
		switch {
		case d.line[0] == 'f' || d.line[0] == 't' || d.line[0] == 'e':
			file = "dynamic_events"
		case d.uprobe():
			file = "uprobe_events"
		}
		fmt.Fprintf(&sc, "echo %s >> %s || { printf '@@%%s %%s\\n' REJECTED %s; cat error_log; }\n", shQuote(d.line), file, d.event())
	}
	sc.WriteString("for e in events/kprobes/enable events/fprobes/enable events/tracepoints/enable events/uprobes/enable events/ep/enable; do [ -e $e ] && echo 1 > $e; done\n")
	sc.WriteString("echo > trace; echo 1 > tracing_on\n")
	sc.WriteString("/bin/ktrace --kernel host record -w /tmp/kt.txt")
	for _, f := range recordFlags {
		sc.WriteString(" " + f)
	}
	for _, d := range defs {
		if !slices.Contains(d.skip, k.Name) {
			sc.WriteString(" " + shQuote(d.line))
		}
	}
	sc.WriteString(" -- /bin/workload 3 2>/tmp/kt.err; printf '@@%s %s\\n' RC \"$?\"\n")
	sc.WriteString("echo 0 > tracing_on\n")
	sc.WriteString(sectionCmd("KERNEL", "cat trace"))
	sc.WriteString(sectionCmd("KTRACE", "cat /tmp/kt.txt"))
	sc.WriteString(sectionCmd("SUMMARY", "cat /tmp/kt.err"))
	sc.WriteString(sectionCmd("PROFILE", "cat kprobe_profile"))
	sc.WriteString(sectionCmd("LEFT", "grep -c ktrace kprobe_events"))
	sc.WriteString(sectionCmd("BUILDINFO", "ls /boot /proc/config.gz 2>/dev/null"))

	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	var st vmtest.Stats
	out, err := vmtest.Run(ctx, k, vmtest.Guest{
		Script: sc.String(),
		Files: map[string][]byte{
			"/bin/ktrace":   kt,
			"/bin/workload": wl,
		},
		Stats: &st,
	})
	if err != nil {
		t.Fatalf("%s: %v\n%s", k.Name, err, out)
	}
	t.Logf("%s: boot %v, script %v", k.Name, st.Boot.Round(time.Millisecond), st.Script.Round(time.Millisecond))
	if len(st.Warnings) > 0 {
		t.Errorf("%s: kernel warnings: %q", k.Name, st.Warnings)
	}
	s := string(out)
	if info := strings.TrimSpace(section(s, "BUILDINFO")); info != "" {
		t.Fatalf("%s: the guest shows build files (%s); the tracer must run on what a running kernel exposes", k.Name, info)
	}
	if strings.Contains(s, "@@REJECTED") {
		t.Errorf("%s: the kernel rejected a corpus line:\n%s", k.Name, s)
	}
	if !strings.Contains(s, "@@RC 0") {
		t.Errorf("%s: ktrace record failed:\n%s", k.Name, section(s, "SUMMARY"))
	}
	r := &bootRun{
		raw:        s,
		kernelText: section(s, "KERNEL"),
		ktraceText: section(s, "KTRACE"),
		summary:    section(s, "SUMMARY"),
	}
	if dir := os.Getenv("KTRACE_VM_DUMP"); dir != "" {
		// Keep the guest's output for inspection.
		if err := os.WriteFile(filepath.Join(dir, "trace-"+k.Name+".txt"), out, 0o644); err != nil {
			t.Log(err)
		}
	}
	r.kernel = parseTrace(r.kernelText, "workload")
	r.ktrace = parseTrace(r.ktraceText, "workload")
	return r
}

// TestRecordVM runs the corpus on both pinned kernels with the kernel's
// tracer and ktrace record attached at the same time and requires the
// same event bodies (the text after the probe's "(ip)"), hit for hit. On
// 6.1, lines only 6.12 accepts run through ktrace and are compared with
// the 6.12 kernel's output.
func TestRecordVM(t *testing.T) {
	vmtest.Require(t)
	ks, err := vmtest.PinnedKernels()
	if err != nil {
		t.Fatal(err)
	}
	runs := map[string]*bootRun{}
	for _, k := range ks {
		runs[k.Name] = runTraceBoot(t, k, traceDefs)
	}
	ref := runs["6.12"]
	for _, k := range ks {
		r := runs[k.Name]
		t.Logf("%s summary:\n%s", k.Name, r.summary)
		if k.Name == "6.12" {
			// The fprobes of one shape share a program and a multi link:
			// t_fs1-3 one, t_fx1-2 another, t_ps1-2 a third. Unshared,
			// there would be a program and a link per probe plus three
			// entry programs (t_rargs, t_rbtf, t_fexit save arguments at
			// entry); sharing saves four.
			var probes, progs, links int
			if m := attachedLine.FindStringSubmatch(r.summary); m != nil {
				fmt.Sscan(m[1], &probes)
				fmt.Sscan(m[2], &progs)
				fmt.Sscan(m[3], &links)
			}
			if probes == 0 || progs > probes+3-4 || links > probes+3-4 {
				t.Errorf("6.12: %d probes in %d programs and %d links; the shared fprobes did not share", probes, progs, links)
			}
		}
		var same, cross, ipSame, hits int
		for _, d := range traceDefs {
			ev := d.event()
			got := r.ktrace[ev]
			var want []hit
			what := "kernel " + k.Name
			switch {
			case d.kernelAccepts(k.Name):
				want = r.kernel[ev]
			case d.cross && ref != nil:
				want = ref.kernel[ev]
				what = "kernel 6.12"
			default:
				continue
			}
			if len(want) == 0 {
				t.Errorf("%s: %s: no hits from %s", k.Name, ev, what)
				continue
			}
			if len(got) != len(want) {
				t.Errorf("%s: %s: ktrace %d hits, %s %d", k.Name, ev, len(got), what, len(want))
			}
			ok := true
			for i := 0; i < len(got) && i < len(want); i++ {
				if got[i].body != want[i].body {
					t.Errorf("%s: %s hit %d:\n ktrace %s\n %s %s", k.Name, ev, i, got[i].body, what, want[i].body)
					ok = false
				}
				switch {
				case got[i].ip == want[i].ip:
					ipSame++
				case !d.kernelAccepts(k.Name):
					// Compared with 6.12's tracer: other addresses.
				case strings.Contains(want[i].ip, "kretprobe'd"):
					// Both tracers' return probes on one function: the
					// kernel's saw the return address ktrace's had
					// already replaced, and could not name the caller.
					ipSame++
				default:
					t.Errorf("%s: %s hit %d (ip):\n ktrace (%s)\n %s (%s)", k.Name, ev, i, got[i].ip, what, want[i].ip)
					ok = false
				}
				hits++
			}
			if ok && len(got) == len(want) {
				if d.kernelAccepts(k.Name) {
					same++
				} else {
					cross++
				}
			}
		}
		t.Logf("%s: %d definitions equal to this kernel's tracer, %d equal to 6.12's (6.12-only syntax through ktrace), %d hits compared, %d with the same (ip) part",
			k.Name, same, cross, hits, ipSame)
		if left := strings.TrimSpace(section(r.raw, "LEFT")); left != "0" {
			t.Errorf("%s: ktrace left %s tracefs kprobe events behind", k.Name, left)
		}
		checkSymstr(t, k.Name, r.ktrace["t_symstr"])
	}
}

// attachedLine is record's summary of what it attached.
var attachedLine = regexp.MustCompile(`attached (\d+) probes in \S+ \((\d+) programs, (\d+) links\)`)

// checkSymstr requires each t_symstr hit to print the symstr argument as
// the quoted text of the same address printed as a symbol.
func checkSymstr(t *testing.T, k string, hits []hit) {
	t.Helper()
	if len(hits) == 0 {
		t.Errorf("%s: t_symstr: no hits", k)
	}
	re := regexp.MustCompile(`^ ops="(.*)" fop=(.*)$`)
	for _, h := range hits {
		m := re.FindStringSubmatch(h.body)
		if m == nil || m[1] != m[2] || !strings.Contains(m[2], "+0x0/0x") {
			t.Errorf("%s: t_symstr body %q: want ops=\"SYM+0x0/0xSIZE\" equal to fop", k, h.body)
		}
	}
}
