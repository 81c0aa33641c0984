package main

import (
	"os"
	"os/exec"
	"testing"
	"time"
)

// benchExecEnv makes the test binary run as ktrace (see TestMain).
const benchExecEnv = "KTRACE_BENCH_EXEC"

// runCLI runs the test binary as `ktrace ARGS...` on the embedded model
// and returns how long the whole process took.
func runCLI(b *testing.B, args ...string) time.Duration {
	b.Helper()
	c := exec.Command(os.Args[0], args...)
	c.Env = append(os.Environ(), benchExecEnv+"=1", "KTRACE_KERNEL=embedded")
	start := time.Now()
	if err := c.Run(); err != nil {
		b.Fatalf("ktrace %q: %v", args, err)
	}
	return time.Since(start)
}

// The commands compared: check on one line (the README's first example,
// with a BTF argument) is the reference; funcs over
// the whole 6.12 model, funcs with a glob, and args should each take less
// than twice its time (process start and model load included, as a user
// sees it).
var benchCommands = []struct {
	name string
	args []string
}{
	{"check", []string{"check", "p:myev do_sys_openat2 $arg1"}},
	{"funcs-all", []string{"funcs"}},
	{"funcs-glob", []string{"funcs", "vfs_*"}},
	{"args", []string{"args", "do_sys_openat2"}},
	{"funcs-t", []string{"funcs", "-t", "sched:*"}},
	// A line that needs no BTF: check's cheapest.
	{"check-nobtf", []string{"check", "p:myev vfs_read"}},
}

// BenchmarkCLI runs each command in turn, b.N rounds, and reports each
// one's mean wall time per run (ms/NAME) and its ratio to check's
// (NAME/check). Interleaving the commands keeps a busy machine from
// favouring one of them.
func BenchmarkCLI(b *testing.B) {
	total := make([]time.Duration, len(benchCommands))
	for _, c := range benchCommands {
		runCLI(b, c.args...) // warm the page cache
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for j, c := range benchCommands {
			total[j] += runCLI(b, c.args...)
		}
	}
	b.StopTimer()
	ref := total[0]
	for j, c := range benchCommands {
		b.ReportMetric(float64(total[j].Milliseconds())/float64(b.N), "ms/"+c.name)
		if j > 0 {
			b.ReportMetric(float64(total[j])/float64(ref), c.name+"/check")
		}
	}
}
