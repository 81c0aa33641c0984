package vmtest

import (
	"context"
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
