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

func (e *env) newWorld() *world { return e.newWorldFor(nil) }

// newWorldFor is newWorld with a mount's ownership (nil: root's tree, as
// `ktrace sh` and the other verbs show it).
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
	o := tracefs.Options{
		Major:      e.dialect.Major,
		Minor:      e.dialect.Minor,
		CPUs:       e.model.CPUs(),
		PipeBlocks: pipeBlocks,
	}
	if acc != nil {
		o.Root, o.Mount = acc.root, acc.opts
	}
	return o
}

// writeResult is the outcome of one write(2) to a control file.
type writeResult struct {
	errno syscall.Errno // 0 on success
	logs  []events.LogEntry
}

// writeLine appends line+"\n" to the control file as one write(2), like
// `echo LINE >> FILE`. A rejected write's error_log entries come with its
// error (events.WriteError), as the kernel appended them.
func (w *world) writeLine(file tracefs.ControlFile, line string) writeResult {
	h, err := w.fs.Open(file.String(), os.O_WRONLY|os.O_APPEND)
	if err != nil {
		return writeResult{errno: grammar.ErrnoOf(err)}
	}
	defer h.Close()
	_, err = h.Write([]byte(line + "\n"))
	if err == nil {
		return writeResult{}
	}
	res := writeResult{errno: grammar.ErrnoOf(err)}
	var we *events.WriteError
	if errors.As(err, &we) {
		res.logs = we.Logs
	}
	return res
}

// defaultFile is the control file a line goes to when none is given: the
// kprobe lines (and removals) to kprobe_events, everything else to
// dynamic_events.
func defaultFile(line string) tracefs.ControlFile {
	if line != "" && (line[0] == 'p' || line[0] == 'r' || line[0] == '-') {
		return tracefs.KprobeEvents
	}
	return tracefs.DynamicEvents
}

// parseFile maps a --file value to a control file.
func parseFile(s string) (tracefs.ControlFile, bool) { return events.FileNamed(s) }
