package main

import (
	"errors"
	"io/fs"
	"os"
	"syscall"

	"github.com/ktrace-dev/ktrace/grammar"
	"github.com/ktrace-dev/ktrace/kernel"
	"github.com/ktrace-dev/ktrace/tracefs/live"
	"github.com/ktrace-dev/ktrace/tracer"
)

// env is the kernel model and syntax a command works with.
type env struct {
	model   *kernel.Model
	dialect *grammar.Dialect
}

// loadEnv opens the kernel model and picks the dialect. defSyntax is the
// command's default for --syntax.
func (g *globals) loadEnv(defSyntax string) (*env, error) {
	m, err := kernel.Open(g.kernel)
	if err != nil {
		// The kernel package's errors already name the model.
		return nil, &exitError{code: codeForSystemError(err, g.kernel == "host"), err: err}
	}
	syntax := g.syntax
	if syntax == "" {
		syntax = defSyntax
	}
	d := grammar.Latest
	if syntax == "kernel" {
		major, minor, _ := m.KernelVersion()
		d = grammar.DialectFor(major, minor)
	}
	return &env{model: m, dialect: d}, nil
}

// codeForSystemError maps a failure to open or capture a kernel to exit 3
// when it is a missing privilege or kernel feature, else 1. For the running
// system (host) a missing file is a missing kernel feature (debugfs not
// mounted, no BTF, ...); for a snapshot directory it is a bad argument.
func codeForSystemError(err error, host bool) int {
	if errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.EPERM) ||
		errors.Is(err, kernel.ErrHiddenAddresses) || errors.Is(err, kernel.ErrNoBTF) {
		return exitNoAccess
	}
	if host && errors.Is(err, fs.ErrNotExist) {
		return exitNoAccess
	}
	return exitRejected
}

// openWorld is the tracefs of `ktrace sh` (mount nil) and `ktrace mount`
// (mount: the mount's ownership), live where probes can attach.
func (e *env) openWorld(mount *live.Access) *live.World {
	return e.openWorldExport(mount, nil)
}

// openWorldExport is openWorld with the live backend's records also given
// to export (nil: none).
func (e *env) openWorldExport(mount *live.Access, export func(*tracer.Decoder, *tracer.Record)) *live.World {
	return live.Open(live.Config{Model: e.model, Dialect: e.dialect, Mount: mount, Reaper: tracer.SelfReaper(), Warn: os.Stderr, Export: export})
}
