package vmtest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// Kernel is one bootable kernel snapshot: a directory holding at least a
// vmlinuz (see ../shared/kernels/README.md for the other files).
type Kernel struct {
	Name string // directory name, e.g. "6.1" or "6.12"
	Dir  string // absolute path of the snapshot directory
}

// Image is the path of the kernel's bootable image.
func (k Kernel) Image() string { return filepath.Join(k.Dir, "vmlinuz") }

// ModuleRoot returns the directory of ktrace's go.mod, found by walking up
// from the working directory (tests run in their package directory).
func ModuleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("vmtest: working directory: %w", err)
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && strings.Contains(string(b), "module github.com/ktrace-dev/ktrace\n") {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("vmtest: go.mod of github.com/ktrace-dev/ktrace not found above the working directory")
		}
		dir = parent
	}
}

// KernelsDir is the directory holding the pinned kernel snapshots: the
// environment variable KTRACE_KERNELS if set, else ../shared/kernels
// relative to the module root.
func KernelsDir() (string, error) {
	if d := os.Getenv("KTRACE_KERNELS"); d != "" {
		return filepath.Abs(d)
	}
	root, err := ModuleRoot()
	if err != nil {
		return "", err
	}
	return filepath.Clean(filepath.Join(root, "..", "shared", "kernels")), nil
}

// PinnedKernels lists the kernel snapshots in KernelsDir that have a
// vmlinuz, in version order (6.1 before 6.12). It fails when the directory
// is missing or holds no kernel.
func PinnedKernels() ([]Kernel, error) {
	dir, err := KernelsDir()
	if err != nil {
		return nil, err
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("vmtest: kernel snapshots: %w", err)
	}
	var ks []Kernel
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		k := Kernel{Name: e.Name(), Dir: filepath.Join(dir, e.Name())}
		if _, err := os.Stat(k.Image()); err == nil {
			ks = append(ks, k)
		}
	}
	if len(ks) == 0 {
		return nil, fmt.Errorf("vmtest: no kernel snapshot (DIR/vmlinuz) under %s", dir)
	}
	sort.Slice(ks, func(i, j int) bool { return versionLess(ks[i].Name, ks[j].Name) })
	return ks, nil
}

// versionLess orders dotted version names numerically ("6.1" < "6.12"),
// falling back to string order for non-numeric parts.
func versionLess(a, b string) bool {
	as, bs := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < len(as) && i < len(bs); i++ {
		x, errx := strconv.Atoi(as[i])
		y, erry := strconv.Atoi(bs[i])
		switch {
		case errx == nil && erry == nil && x != y:
			return x < y
		case (errx != nil || erry != nil) && as[i] != bs[i]:
			return as[i] < bs[i]
		}
	}
	return len(as) < len(bs)
}
