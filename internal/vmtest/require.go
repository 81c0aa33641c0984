package vmtest

import (
	"os"
	"os/exec"
	"testing"
)

// Available reports whether VM tests can run here, and if not, why and how
// to enable them.
func Available() (ok bool, why string) {
	if _, err := exec.LookPath(QemuBinary); err != nil {
		return false, QemuBinary + " not found: apt-get install qemu-system-x86"
	}
	if _, _, err := loadBusybox(); err != nil {
		return false, err.Error()
	}
	if _, err := PinnedKernels(); err != nil {
		return false, err.Error() + " (the kernel snapshots live in ../shared/kernels next to the repository, or set KTRACE_KERNELS)"
	}
	return true, ""
}

// Require skips the test when VM tests cannot run here, saying how to
// enable them; with CI=true in the environment it fails the test instead,
// so that a CI machine can never silently skip them. VM tests are also
// skipped under go test -short (they boot kernels for seconds to minutes).
func Require(t testing.TB) {
	t.Helper()
	if testing.Short() && os.Getenv("CI") != "true" {
		t.Skip("VM test skipped in -short mode")
	}
	ok, why := Available()
	if ok {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("VM tests required under CI=true but unavailable: %s", why)
	}
	t.Skipf("VM tests unavailable: %s (install qemu-system-x86 and busybox-static, and provide ../shared/kernels)", why)
}
