package main

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
)

// memoryFuncs picks n functions of kernel k that kprobes accept and the
// guest never runs (filesystems it does not use), so that enabling them
// measures attaching, not hits.
func memoryFuncs(t *testing.T, k vmtest.Kernel, n int) []string {
	t.Helper()
	m := vmtest.Model(t, k.Name)
	f, err := os.Open(filepath.Join(k.Dir, "available_filter_functions"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cold := regexp.MustCompile(`^(ext4|jbd2|nfs|btrfs|xfs|fat|isofs|squashfs|udf|f2fs|ntfs3)_`)
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
		if reg.Exec(events.KprobeEvents, fmt.Sprintf("p:c%d %s", len(out), name)) == nil {
			out = append(out, name)
		}
	}
	if len(out) < n {
		t.Fatalf("only %d probeable functions", len(out))
	}
	return out
}

// TestLiveMemoryVM enables 256 kprobes at once through a live mount (ktrace
// sh where the kernel has no FUSE built in) on both pinned kernels (1 GB guests without build files) and requires
// every one attached, the mount alive, and ktrace under 256 MB resident:
// the live backend shares one ring buffer, one set of maps and one reader
// among all enabled events.
func TestLiveMemoryVM(t *testing.T) {
	kt := vmtest.Ktrace(t)
	const n = 256
	vmtest.ForEachKernel(t, func(t *testing.T, k vmtest.Kernel) {
		var lines strings.Builder
		for i, f := range memoryFuncs(t, k, n) {
			fmt.Fprintf(&lines, "p:kb/a%d %s\n", i, f)
		}
		// The same steps through a mount where the kernel has FUSE built
		// in (6.12), else through ktrace sh (6.1): the live backend is
		// the same.
		// The functions probed, as the kernel lists them: its kprobes,
		// and the functions its ftrace ops (kprobe-multi links) sit on.
		steps := `attached() { { awk '{sub(/[+].*/,"",$3); print $3}' /sys/kernel/debug/kprobes/list; awk '{print $1}' /sys/kernel/tracing/enabled_functions; } | sort -u | grep -c .; }
while read l; do echo "$l" >> DIR/kprobe_events || echo "@@DEFINE-FAILED $l"; done < /lines
echo 1 > DIR/events/kb/enable; echo "@@ENABLE $?"
echo "@@ATTACHED $(attached)"
for p in $(pidof ktrace); do grep VmRSS /proc/$p/status; done
cat DIR/events/kb/a0/enable >/dev/null && echo @@ALIVE
echo 0 > DIR/events/kb/enable; echo "@@DISABLE $?"
echo "@@LEFT $(attached)"
`
		script := `if [ -e /dev/fuse ]; then
mkdir -p /mnt/t
/bin/ktrace --kernel host mount --daemon /mnt/t >/tmp/m.out 2>&1 || { cat /tmp/m.out; exit 1; }
` + strings.ReplaceAll(steps, "DIR/", "/mnt/t/") + `else
/bin/ktrace --kernel host sh -c ` + vmtest.ShQuote(strings.ReplaceAll(steps, "DIR/", "")) + `
fi
`
		ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
		defer cancel()
		out, err := vmtest.Run(ctx, k, vmtest.Guest{Script: script, Files: map[string][]byte{"/bin/ktrace": kt, "/lines": []byte(lines.String())}, Memory: 1024})
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		s := string(out)
		for _, want := range []string{"@@ENABLE 0", fmt.Sprintf("@@ATTACHED %d", n), "@@ALIVE", "@@DISABLE 0", "@@LEFT 0"} {
			if !strings.Contains(s, want) {
				t.Errorf("missing %q:\n%s", want, s)
			}
		}
		if strings.Contains(s, "@@DEFINE-FAILED") {
			t.Errorf("a definition failed:\n%s", s)
		}
		var kb int
		if m := regexp.MustCompile(`VmRSS:\s+(\d+) kB`).FindStringSubmatch(s); m != nil {
			fmt.Sscan(m[1], &kb)
		}
		if kb == 0 || kb > 256<<10 {
			t.Errorf("ktrace resident with %d kprobes enabled: %d kB, want at most 256 MB:\n%s", n, kb, s)
		}
		t.Logf("FIGURE %s: %d kprobes enabled through the live backend: ktrace %d MB resident", k.Name, n, kb>>10)
	})
}
