package fusefs_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/ktrace-dev/ktrace/fusefs"
)

// A mount point that does not exist or is no directory is refused in the
// words `ktrace mount` prints, wrapping the reason.
func TestPrepareMountPointWording(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing")
	for _, tc := range []struct {
		dir, want string
		is        error
	}{
		{missing, missing + " does not exist; create the directory first (mkdir -p " + missing + ")", fs.ErrNotExist},
		{filepath.Join(dir, "no", "parent"), filepath.Join(dir, "no", "parent") + " does not exist; create the directory first (mkdir -p " + filepath.Join(dir, "no", "parent") + ")", fs.ErrNotExist},
		{file, file + " is not a directory", syscall.ENOTDIR},
	} {
		_, err := fusefs.PrepareMountPoint(tc.dir)
		if err == nil || err.Error() != tc.want || !errors.Is(err, tc.is) {
			t.Errorf("PrepareMountPoint(%s) = %v, want %q wrapping %v", tc.dir, err, tc.want, tc.is)
		}
	}
	if cleared, err := fusefs.PrepareMountPoint(dir); cleared != 0 || err != nil {
		t.Errorf("PrepareMountPoint(%s) = %d, %v; want a clean directory", dir, cleared, err)
	}
}
