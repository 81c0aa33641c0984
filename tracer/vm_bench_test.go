package tracer

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/ktrace-dev/ktrace/events"
	"github.com/ktrace-dev/ktrace/internal/vmtest"
	"github.com/ktrace-dev/ktrace/kernel"
)

// benchLine is the probe of the per-hit overhead comparison.
const benchLine = `p:bench do_sys_openat2 dfd=%di:s32 path=+0(%si):string`

// benchFuncs picks n functions of the snapshot that ktrace's model accepts
// as kprobes, from filesystems the guest does not use (probing hot
// functions would measure their hits, not attaching).
func benchFuncs(t *testing.T, k vmtest.Kernel, m *kernel.Model, n int) []string {
	f, err := os.Open(filepath.Join(k.Dir, "available_filter_functions"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// Filesystems the guest never uses: their functions stay cold.
	cold := regexp.MustCompile(`^(ext4|ext2|jbd2|nfs|nfsd|lockd|rpc|xdr|svc|btrfs|xfs|fat|vfat|exfat|isofs|squashfs|erofs|fuse|udf|ntfs3|f2fs|hugetlbfs|autofs|configfs|efivarfs|pstore|quota|dquot|ovl|hfs|hfsplus|minix|romfs|cachefiles|netfs|v9fs|p9|acpi|pci|scsi|ata|drm|hid|usb|thermal|cpufreq|edac|iommu|dmar)_`)
	reg := events.NewRegistry(m, nil)
	var out []string
	seen := map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() && len(out) < n {
		name := strings.Fields(sc.Text())[0]
		if strings.ContainsAny(name, ".[") || !cold.MatchString(name) || seen[name] || m.NumberOfSameSymbols(name) != 1 {
			continue
		}
		seen[name] = true
		if err := reg.Exec(events.KprobeEvents, fmt.Sprintf("p:c%d %s", len(out), name)); err != nil {
			continue
		}
		out = append(out, name)
	}
	if len(out) < n {
		t.Fatalf("only %d probeable functions", len(out))
	}
	return out
}

// TestBenchVM reports, per pinned kernel in a guest with no build files,
// the same-boot cost of getting probes in and out:
//   - attach + detach of 1, 100 and 1000 kprobes (p:) and fprobes (f:) by
//     ktrace record, against the kernel's define + enable + disable +
//     clear of the same lines through tracefs (fprobes: 6.12 only);
//   - one kprobe from ktrace's start to its exit with --duration 100ms,
//     against the tracefs cycle define, enable, sleep 0.1, disable, clear.
//
// Figures under TCG are reported ("FIGURE" lines), not gated. Set
// KTRACE_VM_BENCH=1 to run it (KTRACE_VM_BENCH_MAX caps the probe count).
func TestBenchVM(t *testing.T) {
	if os.Getenv("KTRACE_VM_BENCH") != "1" {
		t.Skip("set KTRACE_VM_BENCH=1 to run the VM benchmarks")
	}
	kt, _ := guestBinaries(t)
	summary := regexp.MustCompile(`attached (\d+) probes in (\S+) \((\d+) programs, (\d+) links\), detached in (\S+)`)
	// uptime prints /proc/uptime's first field, in seconds.
	const uptime = "read u _ < /proc/uptime; echo $u"
	vmtest.ForEachKernel(t, func(t *testing.T, k vmtest.Kernel) {
		m, err := kernel.LoadSnapshot(k.Dir)
		if err != nil {
			t.Fatal(err)
		}
		funcs := benchFuncs(t, k, m, 1000)
		files := map[string][]byte{"/bin/ktrace": kt}
		var sc strings.Builder
		kernelKinds := map[string]bool{"p": true, "f": m.Config("CONFIG_FPROBE") == "y"}
		// One probe from start to exit: oneReps runs of each, alternated,
		// after one ktrace run that fills the per-boot caches, first in
		// the boot (thousands of probes attached and removed leave the
		// guest slower for everything, the kernel's own cycle included).
		one := "p:bk/one vfs_read"
		fmt.Fprintf(&sc, "/bin/ktrace --kernel host record --duration 1ms -w /dev/null '%s' 2>/dev/null\n", one)
		for r := 0; r < oneReps; r++ {
			fmt.Fprintf(&sc, "echo @@KONE%d; %s; echo '%s' >> kprobe_events; echo 1 > events/bk/enable; sleep 0.1; echo 0 > events/bk/enable; echo > kprobe_events; %s; echo @@END-KONE%d\n", r, uptime, one, uptime, r)
			fmt.Fprintf(&sc, "echo @@TONE%d; %s; /bin/ktrace --kernel host record --duration 100ms -w /dev/null '%s' 2>/tmp/e; %s; echo @@END-TONE%d\n", r, uptime, one, uptime, r)
		}
		for _, kind := range []string{"p", "f"} {
			for _, n := range benchSizes() {
				var lines, args strings.Builder
				for i := 0; i < n; i++ {
					fmt.Fprintf(&lines, "%s:bk/a%d %s\n", kind, i, funcs[i])
					fmt.Fprintf(&args, " '%s:bk/a%d %s'", kind, i, funcs[i])
				}
				name := fmt.Sprintf("%s-%d", kind, n)
				files["/lines-"+name] = []byte(lines.String())
				if kernelKinds[kind] {
					fmt.Fprintf(&sc, "echo @@KCYCLE-%s; %s; cat /lines-%s >> dynamic_events; echo 1 > events/bk/enable; echo 0 > events/bk/enable; echo > dynamic_events; %s; echo @@END-KCYCLE-%s\n", name, uptime, name, uptime, name)
				}
				fmt.Fprintf(&sc, "echo @@KT-%s; %s; /bin/ktrace --kernel host record --duration 1ms -w /dev/null%s 2>/tmp/e; %s; grep attached /tmp/e; echo @@END-KT-%s\n", name, uptime, args.String(), uptime, name)
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
		defer cancel()
		out, err := vmtest.Run(ctx, k, vmtest.Guest{Script: sc.String(), Files: files, CPUs: 2})
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		s := string(out)
		span := func(sec string) float64 {
			f := strings.Fields(section(s, sec))
			if len(f) < 2 {
				return 0
			}
			var a, b float64
			fmt.Sscan(f[0], &a)
			fmt.Sscan(f[1], &b)
			return b - a
		}
		for _, kind := range []string{"p", "f"} {
			for _, n := range benchSizes() {
				name := fmt.Sprintf("%s-%d", kind, n)
				mm := summary.FindStringSubmatch(section(s, "KT-"+name))
				if mm == nil {
					t.Errorf("%s: ktrace record with %d %s probes failed:\n%s", k.Name, n, kind, section(s, "KT-"+name))
					continue
				}
				at, _ := time.ParseDuration(mm[2])
				dt, _ := time.ParseDuration(mm[5])
				line := fmt.Sprintf("FIGURE %s %d %s: ktrace attach %s + detach %s = %.2fs (%s programs, %s links), start to exit %.2fs",
					k.Name, n, kind, mm[2], mm[5], (at + dt).Seconds(), mm[3], mm[4], span("KT-"+name))
				if kc := span("KCYCLE-" + name); kc > 0 {
					line += fmt.Sprintf("; kernel define+enable+disable+clear %.2fs; ratio %.2f", kc, (at+dt).Seconds()/kc)
				}
				t.Log(line)
			}
		}
		var ks, ts []float64
		for r := 0; r < oneReps; r++ {
			ks = append(ks, span(fmt.Sprintf("KONE%d", r)))
			ts = append(ts, span(fmt.Sprintf("TONE%d", r)))
		}
		ko, to := medianOf(ks), medianOf(ts)
		ratio := 0.0
		if ko > 0 {
			ratio = to / ko
		}
		t.Logf("FIGURE %s one kprobe: ktrace start to exit with --duration 100ms %.2fs; tracefs define, enable, sleep 0.1, disable, clear %.2fs; ratio %.2f (medians of %d; ktrace %v, tracefs %v)", k.Name, to, ko, ratio, oneReps, ts, ks)
	})
}

// oneReps is how many times the one-probe start-to-exit figure is
// measured (the median is reported): one run of a short-lived process
// under emulation varies by a third from run to run.
const oneReps = 5

// medianOf returns the median of v (0 for none).
func medianOf(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	v = append([]float64(nil), v...)
	sort.Float64s(v)
	return v[len(v)/2]
}

// benchSizes are the probe counts of the attach benchmark:
// KTRACE_VM_BENCH_MAX caps them (default 1000).
func benchSizes() []int {
	max := 1000
	if v := os.Getenv("KTRACE_VM_BENCH_MAX"); v != "" {
		fmt.Sscan(v, &max)
	}
	var out []int
	for _, n := range []int{1, 100, 1000} {
		if n <= max {
			out = append(out, n)
		}
	}
	return out
}

// hitCostLines are the probes of the per-hit cost comparison, on the
// cheapest system call: a bare kprobe, a kretprobe, three registers, and
// a register with a string ($comm).
var hitCostLines = []struct{ name, line string }{
	{"kprobe", `p:b/a __x64_sys_getppid`},
	{"kretprobe", `r:b/a __x64_sys_getppid $retval`},
	{"3 args", `p:b/a __x64_sys_getppid x=%di y=%si z=%dx`},
	{"string", `p:b/a __x64_sys_getppid regs=%di c=$comm`},
}

// TestHitCostVM reports, per pinned kernel in a 2-CPU guest with no build
// files, the per-call cost of each hitCostLines probe over 200,000
// getppid calls: the kernel's own event streamed to a file by a
// "cat trace_pipe" reader, and ktrace record writing to a file, each
// beside the bare loop of the same boot, with the events each delivered
// (the rest were lost). Figures under TCG are reported, not gated. Set
// KTRACE_VM_BENCH=1 to run it.
func TestHitCostVM(t *testing.T) {
	if os.Getenv("KTRACE_VM_BENCH") != "1" {
		t.Skip("set KTRACE_VM_BENCH=1 to run the VM benchmarks")
	}
	kt, wl := guestBinaries(t)
	const calls = 200000
	// Each probe is measured reps times, alternating the bare loop, the
	// kernel's event and ktrace, and the medians are reported: emulation
	// on a shared machine varies from run to run.
	reps := 3
	if v := os.Getenv("KTRACE_VM_BENCH_REPEAT"); v != "" {
		fmt.Sscan(v, &reps)
	}
	vmtest.ForEachKernel(t, func(t *testing.T, k vmtest.Kernel) {
		w := fmt.Sprintf("/bin/workload getppid %d", calls)
		var sc strings.Builder
		fmt.Fprintf(&sc, "%s >/dev/null\n", w)
		for i, l := range hitCostLines {
			for r := 0; r < reps; r++ {
				id := fmt.Sprintf("%d-%d", i, r)
				fmt.Fprintf(&sc, "echo @@BASE%s; %s; echo @@END-BASE%s\n", id, w, id)
				fmt.Fprintf(&sc, "echo %s >> kprobe_events; echo 1 > events/b/a/enable; echo > trace\n", shQuote(l.line))
				sc.WriteString("cat trace_pipe > /tmp/k.txt & cp=$!\n")
				fmt.Fprintf(&sc, "echo @@KERNEL%s; %s; echo @@END-KERNEL%s\n", id, w, id)
				sc.WriteString("sleep 2; echo 0 > events/b/a/enable; kill $cp; wait $cp 2>/dev/null\n")
				fmt.Fprintf(&sc, "echo @@KLINES%s; grep -c ' a: ' /tmp/k.txt; echo @@END-KLINES%s\n", id, id)
				sc.WriteString("echo > kprobe_events; echo > trace; rm -f /tmp/k.txt\n")
				fmt.Fprintf(&sc, "echo @@KTRACE%s; /bin/ktrace --kernel host record %s -w /tmp/t.txt -- %s 2>/tmp/e; echo @@END-KTRACE%s\n", id, shQuote(l.line), w, id)
				fmt.Fprintf(&sc, "echo @@TLINES%s; grep -c ' a: ' /tmp/t.txt; echo @@END-TLINES%s\n", id, id)
				sc.WriteString("rm -f /tmp/t.txt\n")
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
		defer cancel()
		out, err := vmtest.Run(ctx, k, vmtest.Guest{
			Script: sc.String(),
			Files:  map[string][]byte{"/bin/ktrace": kt, "/bin/workload": wl},
			CPUs:   2,
		})
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		s := string(out)
		count := func(sec string) int {
			var v int
			fmt.Sscan(strings.TrimSpace(section(s, sec)), &v)
			return v
		}
		median := func(v []int) int {
			sort.Ints(v)
			return v[len(v)/2]
		}
		for i, l := range hitCostLines {
			var base, ko, to, kl, tl []int
			for r := 0; r < reps; r++ {
				id := fmt.Sprintf("%d-%d", i, r)
				b, kn, kt := nsPerOp(s, "BASE"+id), nsPerOp(s, "KERNEL"+id), nsPerOp(s, "KTRACE"+id)
				if b == 0 || kn == 0 || kt == 0 {
					t.Errorf("%s: missing timings:\n%s", l.name, s)
					continue
				}
				base, ko, to = append(base, b), append(ko, kn-b), append(to, kt-b)
				kl, tl = append(kl, count("KLINES"+id)), append(tl, count("TLINES"+id))
			}
			if len(base) == 0 {
				continue
			}
			mko, mto := median(ko), median(to)
			ratio := 0.0
			if mko > 0 {
				ratio = float64(mto) / float64(mko)
			}
			t.Logf("FIGURE %s %s: %d getppid calls, 2 vCPUs (TCG), median of %d: base %d ns/call; kernel event streamed by cat trace_pipe +%d ns (%d events, %d lost); ktrace record -w +%d ns (%d events, %d lost); ratio %.2f (runs: kernel %v, ktrace %v)",
				k.Name, l.name, calls, len(base), median(base), mko, median(kl), calls-median(kl), mto, median(tl), calls-median(tl), ratio, ko, to)
		}
	})
}

// nsopLine is the workload's timing line.
var nsopLine = regexp.MustCompile(`(\d+) ns/op`)

// nsPerOp reads the workload's "N ns/op" from section sec of a guest's
// output (0 when missing).
func nsPerOp(out, sec string) int {
	var v int
	if mm := nsopLine.FindStringSubmatch(section(out, sec)); mm != nil {
		fmt.Sscan(mm[1], &v)
	}
	return v
}
