package vmtest

import (
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/ktrace-dev/ktrace/kernel"
)

var (
	modelsMu sync.Mutex
	models   = map[string]*kernel.Model{}
)

// Model returns the kernel model of pinned snapshot name ("6.1", "6.12"),
// loaded once per test binary: the one model loader of ktrace's tests
// outside package kernel. When the snapshot is missing the test is
// skipped, or fails under CI=true.
func Model(t testing.TB, name string) *kernel.Model {
	t.Helper()
	dir, err := KernelsDir()
	if err == nil {
		dir = filepath.Join(dir, name)
		_, err = os.Stat(filepath.Join(dir, kernel.FileKallsyms))
	}
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("pinned kernel snapshot %s missing: %v", name, err)
		}
		t.Skipf("pinned kernel snapshot %s missing (%v); skipping", name, err)
	}
	modelsMu.Lock()
	defer modelsMu.Unlock()
	if m := models[name]; m != nil {
		return m
	}
	m, err := kernel.LoadSnapshot(dir)
	if err != nil {
		t.Fatalf("loading kernel snapshot %s: %v", dir, err)
	}
	models[name] = m
	return m
}
