package vmtest

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Guest is what runs inside the VM.
type Guest struct {
	// Script is run by busybox sh in /sys/kernel/tracing once the guest has
	// mounted proc, sysfs, devtmpfs, tracefs and debugfs. Its stdout and
	// stderr are what Run returns. /bin holds busybox's applets.
	Script string
	// Files are extra files, keyed by their absolute guest path (e.g.
	// "/bin/runner", "/cases.jsonl"); all are created with mode 0755.
	Files map[string][]byte
	// Stats, when not nil, is filled in with timings of the run.
	Stats *Stats
	// CPUs is the guest's CPU count (0: one).
	CPUs int
	// Memory is the guest's memory in MiB (0: 512).
	Memory int
}

// Stats are the timings of one Run.
type Stats struct {
	Wall   time.Duration // whole Run: initramfs, qemu start to exit
	Boot   time.Duration // guest uptime when /init started (kernel boot)
	Script time.Duration // guest uptime spent in the script
	PID    int           // the qemu process's id (gone when Run returns)
	// Warnings are the console lines in which the guest kernel reported
	// trouble (WARNING, BUG, Oops, ...) even though the script finished:
	// a probe definition that upsets the kernel is worth knowing about.
	Warnings []string
}

// warningMarks are the console substrings that flag kernel trouble.
var warningMarks = []string{"WARNING:", "BUG:", "Oops:", "general protection fault", "Kernel panic", "RIP: "}

// kernelWarnings returns the console lines containing a warning mark.
func kernelWarnings(console []byte) []string {
	var out []string
	for _, l := range strings.Split(strings.ReplaceAll(string(console), "\r", ""), "\n") {
		for _, m := range warningMarks {
			if strings.Contains(l, m) {
				out = append(out, l)
				break
			}
		}
	}
	return out
}

// DefaultTimeout bounds a Run whose context has no deadline.
const DefaultTimeout = 10 * time.Minute

// ExitError reports that the guest script exited with a non-zero status.
// Run returns the script's output along with it.
type ExitError struct {
	Code int
}

func (e *ExitError) Error() string {
	return fmt.Sprintf("vmtest: guest script exited with status %d", e.Code)
}

// GuestError reports that the guest did not finish the script: it
// panicked, hung until the deadline, or qemu stopped early. Console is
// the tail of the guest console for diagnosis.
type GuestError struct {
	Kernel  string
	Reason  string // "kernel panic", "timeout", "qemu exited early"
	Console string
	Err     error // underlying cause (context error, qemu exit status), may be nil
}

func (e *GuestError) Error() string {
	msg := fmt.Sprintf("vmtest: %s guest did not finish (%s)", e.Kernel, e.Reason)
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg + "\n--- console tail ---\n" + e.Console
}

func (e *GuestError) Unwrap() error { return e.Err }

// QemuBinary is the emulator Run starts.
const QemuBinary = "qemu-system-x86_64"

// Run boots k under qemu (TCG, one CPU, 512 MiB) with an initramfs made of
// g, runs g.Script and returns what it wrote. The qemu process and its
// process group are killed when ctx ends; nothing is left running.
//
// Errors: a missing qemu or kernel image is reported before booting; a
// guest that panics, hangs or stops early yields *GuestError; a script
// that exits non-zero yields *ExitError together with its output.
func Run(ctx context.Context, k Kernel, g Guest) ([]byte, error) {
	start := time.Now()
	qemu, err := exec.LookPath(QemuBinary)
	if err != nil {
		return nil, fmt.Errorf("vmtest: %s not found (apt-get install qemu-system-x86): %w", QemuBinary, err)
	}
	if _, err := os.Stat(k.Image()); err != nil {
		return nil, fmt.Errorf("vmtest: kernel %s: %w", k.Name, err)
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultTimeout)
		defer cancel()
	}

	var nonce [8]byte
	if _, err := rand.Read(nonce[:]); err != nil {
		return nil, fmt.Errorf("vmtest: marker: %w", err)
	}
	marker := "@@VMTEST-DONE-" + hex.EncodeToString(nonce[:])
	initrd, err := buildInitramfs(g, marker)
	if err != nil {
		return nil, err
	}
	work, err := os.MkdirTemp("", "vmtest-")
	if err != nil {
		return nil, fmt.Errorf("vmtest: %w", err)
	}
	defer os.RemoveAll(work)
	initrdPath := filepath.Join(work, "initrd.gz")
	consolePath := filepath.Join(work, "console")
	outPath := filepath.Join(work, "out")
	if err := os.WriteFile(initrdPath, initrd, 0o644); err != nil {
		return nil, fmt.Errorf("vmtest: %w", err)
	}

	// no_timer_check: under TCG on a loaded host the kernel's check that
	// the 8254 timer reaches the IO-APIC can miss its window and panic the
	// guest at boot ("IO-APIC + timer doesn't work!"); the emulated timer
	// works, so the check is skipped.
	cmd := exec.CommandContext(ctx, qemu,
		"-accel", "tcg", "-cpu", "max,-cx16", "-smp", strconv.Itoa(max(1, g.CPUs)), "-m", strconv.Itoa(cmp.Or(g.Memory, 512)),
		"-nographic", "-no-reboot", "-monitor", "none",
		"-kernel", k.Image(), "-initrd", initrdPath,
		"-append", "console=ttyS0 quiet panic=-1 nokaslr no_hash_pointers no_timer_check",
		"-serial", "file:"+consolePath, "-serial", "file:"+outPath)
	var qemuOut bytes.Buffer
	cmd.Stdout = &qemuOut
	cmd.Stderr = &qemuOut
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		// qemu leads its own process group: kill the group.
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	cmd.WaitDelay = 5 * time.Second
	// qemu starts no children, so once Run has reaped it nothing is left;
	// the group kill in Cancel happens before reaping, while the pid is
	// still ours.
	runErr := cmd.Run()

	console, _ := os.ReadFile(consolePath)
	out, _ := os.ReadFile(outPath)
	if g.Stats != nil {
		g.Stats.Wall = time.Since(start)
		if cmd.Process != nil {
			g.Stats.PID = cmd.Process.Pid
		}
		g.Stats.Boot, g.Stats.Script = uptimes(console, marker)
		g.Stats.Warnings = kernelWarnings(console)
	}

	i := bytes.LastIndex(out, []byte(marker+" "))
	if i < 0 {
		ge := &GuestError{Kernel: k.Name, Console: tail(console, 30)}
		switch {
		case bytes.Contains(console, []byte("Kernel panic")):
			ge.Reason = "kernel panic"
			ge.Console = around(console, "Kernel panic", 20, 100)
		case ctx.Err() != nil:
			ge.Reason, ge.Err = "timeout", ctx.Err()
		default:
			ge.Reason = "qemu exited early"
			if runErr != nil {
				ge.Err = runErr
			}
			if s := strings.TrimSpace(qemuOut.String()); s != "" {
				ge.Console += "\n--- qemu ---\n" + s
			}
		}
		return out, ge
	}
	rest := string(out[i+len(marker)+1:])
	if nl := strings.IndexByte(rest, '\n'); nl >= 0 {
		rest = rest[:nl]
	}
	out = out[:i]
	code, err := strconv.Atoi(strings.TrimSpace(rest))
	if err != nil {
		return out, fmt.Errorf("vmtest: unreadable exit status %q", rest)
	}
	if code != 0 {
		return out, &ExitError{Code: code}
	}
	return out, nil
}

// uptimes reads the guest uptimes /init printed on the console at the
// start and end of the script.
func uptimes(console []byte, marker string) (boot, script time.Duration) {
	get := func(tag string) (time.Duration, bool) {
		i := bytes.LastIndex(console, []byte(tag+" "))
		if i < 0 {
			return 0, false
		}
		f := strings.Fields(string(console[i+len(tag)+1:]))
		if len(f) == 0 {
			return 0, false
		}
		s, err := strconv.ParseFloat(f[0], 64)
		if err != nil {
			return 0, false
		}
		return time.Duration(s * float64(time.Second)), true
	}
	b, ok1 := get(marker + "-START")
	e, ok2 := get(marker + "-END")
	if ok1 {
		boot = b
	}
	if ok1 && ok2 {
		script = e - b
	}
	return boot, script
}

// tail returns the last n lines of b, carriage returns removed.
func tail(b []byte, n int) string {
	s := strings.ReplaceAll(string(b), "\r", "")
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// around returns the lines of b from before lines ahead of the first one
// containing needle, up to limit lines, carriage returns removed: the panic
// message and what led to it rather than only the stack dump after it.
func around(b []byte, needle string, before, limit int) string {
	lines := strings.Split(strings.TrimRight(strings.ReplaceAll(string(b), "\r", ""), "\n"), "\n")
	for i, l := range lines {
		if strings.Contains(l, needle) {
			lo := max(0, i-before)
			hi := min(len(lines), lo+limit)
			return strings.Join(lines[lo:hi], "\n")
		}
	}
	return tail(b, limit)
}

// IsGuestError reports whether err is a *GuestError (panic, hang, early exit).
func IsGuestError(err error) bool {
	var ge *GuestError
	return errors.As(err, &ge)
}
