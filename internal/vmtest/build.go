package vmtest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
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
