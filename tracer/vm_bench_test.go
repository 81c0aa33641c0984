package tracer

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
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

// TestBenchVM reports, per pinned kernel, the per-hit overhead of a ktrace
// probe against the kernel's own kprobe event on the same function and
// workload in the same boot, and the time ktrace record takes to compile,
// load and attach 1, 100 and 1000 kprobes and fprobes (kprobe-multi links
// on 6.12, kprobes on 6.1). Under TCG the figures are noisy: they are
// reported, not gated. Set KTRACE_VM_BENCH=1 to run it.
func TestBenchVM(t *testing.T) {
	if os.Getenv("KTRACE_VM_BENCH") != "1" {
		t.Skip("set KTRACE_VM_BENCH=1 to run the VM benchmarks")
	}
	vmtest.Require(t)
	ks, err := vmtest.PinnedKernels()
	if err != nil {
		t.Fatal(err)
	}
	kt, wl := guestBinaries(t)
	const loops = 20000
	attached := regexp.MustCompile(`attached (\d+) probes in (\S+)`)
	for _, k := range ks {
		t.Run(k.Name, func(t *testing.T) {
			m, err := kernel.LoadSnapshot(k.Dir)
			if err != nil {
				t.Fatal(err)
			}
			funcs := benchFuncs(t, k, m, 1000)
			var sc strings.Builder
			w := fmt.Sprintf("/bin/workload open %d", loops)
			fmt.Fprintf(&sc, "mkdir -p /tmp/ktrace-wl\n%s >/dev/null\n", w)
			fmt.Fprintf(&sc, "echo @@BASE; %s; echo @@END-BASE\n", w)
			fmt.Fprintf(&sc, "echo %s >> kprobe_events; echo 1 > events/kprobes/bench/enable\n", shQuote(benchLine))
			fmt.Fprintf(&sc, "echo @@KERNEL; %s; echo @@END-KERNEL\n", w)
			sc.WriteString("echo 0 > events/kprobes/bench/enable; echo > kprobe_events; echo > trace\n")
			fmt.Fprintf(&sc, "echo @@KTRACE; /bin/ktrace --kernel host record %s -w /dev/null -- %s 2>/tmp/b.err; cat /tmp/b.err; echo @@END-KTRACE\n", shQuote(benchLine), w)
			for _, kind := range []string{"p", "f"} {
				for _, n := range benchSizes() {
					fmt.Fprintf(&sc, "echo @@ATTACH-%s-%d; /bin/ktrace --kernel host record --duration 1ms -w /dev/null", kind, n)
					for i := 0; i < n; i++ {
						fmt.Fprintf(&sc, " '%s:a%d %s'", kind, i, funcs[i])
					}
					fmt.Fprintf(&sc, " 2>&1 | grep -E 'attached|ktrace: record'; echo @@END-ATTACH-%s-%d\n", kind, n)
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
			defer cancel()
			out, err := vmtest.Run(ctx, k, vmtest.Guest{
				Script: sc.String(),
				Files: map[string][]byte{
					"/bin/ktrace":   kt,
					"/bin/workload": wl,
				},
			})
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			s := string(out)
			num := func(sec string) int { return nsPerOp(s, sec) }
			base, kern, kt := num("BASE"), num("KERNEL"), num("KTRACE")
			if base == 0 || kern == 0 || kt == 0 {
				t.Fatalf("missing timings:\n%s", s)
			}
			ko, to := kern-base, kt-base
			ratio := 0.0
			if ko > 0 {
				ratio = float64(to) / float64(ko)
			}
			t.Logf("%s per-hit overhead on do_sys_openat2 (%d opens, TCG, 1 vCPU, ktrace's reader on the same CPU): base %d ns/op, kernel kprobe event %d ns/op (+%d), ktrace %d ns/op (+%d), ratio %.2f",
				k.Name, loops, base, kern, ko, kt, to, ratio)
			t.Logf("%s ktrace summary:\n%s", k.Name, section(s, "KTRACE"))
			for _, kind := range []string{"p", "f"} {
				for _, n := range benchSizes() {
					sec := section(s, fmt.Sprintf("ATTACH-%s-%d", kind, n))
					if mm := attached.FindStringSubmatch(sec); mm != nil {
						t.Logf("%s: %d %s probes compiled, loaded and attached in %s", k.Name, n, map[string]string{"p": "kprobe", "f": "fprobe"}[kind], mm[2])
					} else {
						t.Errorf("%s: attaching %d %s probes failed:\n%s", k.Name, n, kind, sec)
					}
				}
			}
		})
	}
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
	vmtest.Require(t)
	ks, err := vmtest.PinnedKernels()
	if err != nil {
		t.Fatal(err)
	}
	kt, wl := guestBinaries(t)
	const calls = 200000
	for _, k := range ks {
		t.Run(k.Name, func(t *testing.T) {
			w := fmt.Sprintf("/bin/workload getppid %d", calls)
			var sc strings.Builder
			fmt.Fprintf(&sc, "%s >/dev/null\n", w)
			for i, l := range hitCostLines {
				fmt.Fprintf(&sc, "echo @@BASE%d; %s; echo @@END-BASE%d\n", i, w, i)
				fmt.Fprintf(&sc, "echo %s >> kprobe_events; echo 1 > events/b/a/enable; echo > trace\n", shQuote(l.line))
				sc.WriteString("cat trace_pipe > /tmp/k.txt & cp=$!\n")
				fmt.Fprintf(&sc, "echo @@KERNEL%d; %s; echo @@END-KERNEL%d\n", i, w, i)
				sc.WriteString("sleep 2; echo 0 > events/b/a/enable; kill $cp; wait $cp 2>/dev/null\n")
				fmt.Fprintf(&sc, "echo @@KLINES%d; grep -c ' a: ' /tmp/k.txt; echo @@END-KLINES%d\n", i, i)
				sc.WriteString("echo > kprobe_events; echo > trace; rm -f /tmp/k.txt\n")
				fmt.Fprintf(&sc, "echo @@KTRACE%d; /bin/ktrace --kernel host record %s -w /tmp/t.txt -- %s 2>/tmp/e; echo @@END-KTRACE%d\n", i, shQuote(l.line), w, i)
				fmt.Fprintf(&sc, "echo @@TLINES%d; grep -c ' a: ' /tmp/t.txt; cat /tmp/e; echo @@END-TLINES%d\n", i, i)
				sc.WriteString("rm -f /tmp/t.txt\n")
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
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
			num := func(sec string) int { return nsPerOp(s, sec) }
			count := func(sec string) int {
				var v int
				fmt.Sscan(strings.TrimSpace(section(s, sec)), &v)
				return v
			}
			for i, l := range hitCostLines {
				base, kern, kt := num(fmt.Sprint("BASE", i)), num(fmt.Sprint("KERNEL", i)), num(fmt.Sprint("KTRACE", i))
				if base == 0 || kern == 0 || kt == 0 {
					t.Errorf("%s: missing timings:\n%s", l.name, s)
					continue
				}
				ko, to := kern-base, kt-base
				ratio := 0.0
				if ko > 0 {
					ratio = float64(to) / float64(ko)
				}
				kl, tl := count(fmt.Sprint("KLINES", i)), count(fmt.Sprint("TLINES", i))
				t.Logf("FIGURE %s %s: %d getppid calls, 2 vCPUs (TCG): base %d ns/call; kernel event streamed by cat trace_pipe +%d ns (%d events, %d lost); ktrace record -w +%d ns (%d events, %d lost); ratio %.2f",
					k.Name, l.name, calls, base, ko, kl, calls-kl, to, tl, calls-tl, ratio)
			}
		})
	}
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
