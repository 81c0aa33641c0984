package vmtest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// Kernels requires VM tests (see Require) and returns the pinned kernels.
func Kernels(t testing.TB) []Kernel {
	t.Helper()
	Require(t)
	ks, err := PinnedKernels()
	if err != nil {
		t.Fatal(err)
	}
	return ks
}

// ForEachKernel runs fn as a subtest named after each pinned kernel.
func ForEachKernel(t *testing.T, fn func(t *testing.T, k Kernel)) {
	t.Helper()
	for _, k := range Kernels(t) {
		t.Run(k.Name, func(t *testing.T) { fn(t, k) })
	}
}

var (
	binMu  sync.Mutex
	bins   = map[string][]byte{}
	binErr = map[string]error{}
)

// BuildStatic compiles the Go main package pkg (an import path such as
// "github.com/ktrace-dev/ktrace/internal/conformance/cmd/tracefs-runner" or a
// path relative to the module root such as "./cmd/ktrace") into a static
// linux/amd64 binary for the guest (CGO_ENABLED=0) and returns its bytes.
func BuildStatic(ctx context.Context, pkg string) ([]byte, error) {
	root, err := ModuleRoot()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "vmtest-build-")
	if err != nil {
		return nil, fmt.Errorf("vmtest: %w", err)
	}
	defer os.RemoveAll(dir)
	out := filepath.Join(dir, "bin")
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags=-s -w", "-o", out, pkg)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("vmtest: go build %s: %w\n%s", pkg, err, stderr.String())
	}
	b, err := os.ReadFile(out)
	if err != nil {
		return nil, fmt.Errorf("vmtest: reading built %s: %w", pkg, err)
	}
	return b, nil
}

// Binary returns the static build of the package at pkg (relative to the
// module root, "./cmd/ktrace"), built once per test binary, for putting
// into guests.
func Binary(t testing.TB, pkg string) []byte {
	t.Helper()
	binMu.Lock()
	defer binMu.Unlock()
	if b, ok := bins[pkg]; ok {
		return b
	}
	if err, ok := binErr[pkg]; ok {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	b, err := BuildStatic(ctx, pkg)
	if err != nil {
		binErr[pkg] = err
		t.Fatal(err)
	}
	bins[pkg] = b
	return b
}

// Ktrace returns ktrace's static binary (Binary of ./cmd/ktrace).
func Ktrace(t testing.TB) []byte { return Binary(t, "./cmd/ktrace") }

// ShQuote quotes s for a POSIX shell command line.
func ShQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// TestBinary returns the static test binary of the package at pkg
// (relative to the module root), built once per test binary with go test
// -c, for running a package's guest-side tests inside a VM.
func TestBinary(t testing.TB, pkg string) []byte {
	t.Helper()
	key := "test:" + pkg
	binMu.Lock()
	defer binMu.Unlock()
	if b, ok := bins[key]; ok {
		return b
	}
	if err, ok := binErr[key]; ok {
		t.Fatal(err)
	}
	root, err := ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "vmtest-testbin-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	out := filepath.Join(dir, "pkg.test")
	build := exec.Command("go", "test", "-c", "-trimpath", "-ldflags=-s -w", "-o", out, pkg)
	build.Dir = root
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64")
	var stderr bytes.Buffer
	build.Stderr = &stderr
	if err := build.Run(); err != nil {
		binErr[key] = fmt.Errorf("vmtest: building the test binary of %s: %v\n%s", pkg, err, stderr.String())
		t.Fatal(binErr[key])
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	bins[key] = b
	return b
}
