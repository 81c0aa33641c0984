package main

import (
	"errors"
	"io/fs"
	"os"
	"syscall"

	"github.com/ktrace-dev/ktrace/events"
	"github.com/ktrace-dev/ktrace/grammar"
	"github.com/ktrace-dev/ktrace/kernel"
	"github.com/ktrace-dev/ktrace/tracefs"
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

// world is one emulated tracefs over a fresh event registry.
type world struct {
	reg *events.Registry
	fs  *tracefs.FS
}

// newWorldFor is a world over the emulation alone, with a mount's
// ownership (nil: root's tree, as `ktrace sh` shows it).
func (e *env) newWorldFor(acc *mountAccess) *world {
	reg := events.NewRegistry(e.model, e.dialect)
	fsys := tracefs.New(tracefs.NewRegistryBackend(reg), e.tracefsOptions(false, acc))
	return &world{reg: reg, fs: fsys}
}

// mountAccess is the ownership of a mount's tree: the mounting user in
// root's place, and tracefs's mount options uid=, gid= and mode=.
type mountAccess struct {
	root tracefs.Owner
	opts tracefs.MountOptions
}

// tracefsOptions are the tracefs options of the model's release.
func (e *env) tracefsOptions(pipeBlocks bool, acc *mountAccess) tracefs.Options {
	m := e.model
	o := tracefs.Options{
		Major:      e.dialect.Major,
		Minor:      e.dialect.Minor,
		CPUs:       e.model.CPUs(),
		PipeBlocks: pipeBlocks,
		Static:     func() []tracefs.StaticEvent { return tracefs.StaticEvents(m) },
		Warn:       os.Stderr,
	}
	if acc != nil {
		o.Root, o.Mount = acc.root, acc.opts
	}
	return o
}
