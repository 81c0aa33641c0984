package vmtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

// firstKernel returns the first pinned kernel (the quickest to boot).
func firstKernel(t *testing.T) Kernel {
	t.Helper()
	Require(t)
	ks, err := PinnedKernels()
	if err != nil {
		t.Fatal(err)
	}
	return ks[0]
}

func TestRunScriptFilesAndStatus(t *testing.T) {
	k := firstKernel(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var st Stats
	out, err := Run(ctx, k, Guest{
		Script: "pwd; cat /data/hello.txt; test -e kprobe_events && echo tracefs; printf 'no newline'; exit 3",
		Files:  map[string][]byte{"/data/hello.txt": []byte("hello\tworld\n")},
		Stats:  &st,
	})
	var ee *ExitError
	if !errors.As(err, &ee) || ee.Code != 3 {
		t.Fatalf("Run error = %v, want exit status 3", err)
	}
	want := "/sys/kernel/tracing\nhello\tworld\ntracefs\nno newline"
	if string(out) != want {
		t.Errorf("output = %q, want %q", out, want)
	}
	if len(st.Warnings) > 0 {
		t.Errorf("kernel warnings on a harmless script: %q", st.Warnings)
	}
	t.Logf("%s: wall %v, boot %v, script %v", k.Name, st.Wall.Round(time.Millisecond), st.Boot.Round(time.Millisecond), st.Script.Round(time.Millisecond))
}

func TestRunReportsPanic(t *testing.T) {
	k := firstKernel(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, err := Run(ctx, k, Guest{Script: "echo before; echo c >/proc/sysrq-trigger; sleep 60"})
	var ge *GuestError
	if !errors.As(err, &ge) || ge.Reason != "kernel panic" {
		t.Fatalf("Run error = %v, want a kernel panic GuestError", err)
	}
	if !strings.Contains(ge.Console, "Kernel panic") {
		t.Errorf("console tail lacks the panic:\n%s", ge.Console)
	}
}

func TestRunReportsHang(t *testing.T) {
	k := firstKernel(t)
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Second)
	defer cancel()
	start := time.Now()
	var st Stats
	_, err := Run(ctx, k, Guest{Script: "echo hanging; sleep 600", Stats: &st})
	var ge *GuestError
	if !errors.As(err, &ge) || ge.Reason != "timeout" || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Run error = %v, want a timeout GuestError", err)
	}
	if d := time.Since(start); d > 22*time.Second {
		t.Errorf("Run returned %v after the deadline", d-12*time.Second)
	}
	if st.PID == 0 {
		t.Fatal("no qemu pid recorded")
	}
	if _, err := os.Stat(fmt.Sprintf("/proc/%d", st.PID)); err == nil {
		t.Errorf("qemu (pid %d) still running after Run returned", st.PID)
	}
}

func TestRunMissingKernel(t *testing.T) {
	_, err := Run(context.Background(), Kernel{Name: "none", Dir: t.TempDir()}, Guest{Script: "true"})
	if err == nil || IsGuestError(err) {
		t.Fatalf("Run with no image = %v, want a plain error before booting", err)
	}
}
