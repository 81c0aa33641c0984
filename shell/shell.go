package shell

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/ktrace-dev/ktrace/grammar"
	"github.com/ktrace-dev/ktrace/tracefs"
	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/interp"
	"mvdan.cc/sh/v3/syntax"
)

// tracefsMount is where `ktrace sh` shows the emulated tracefs; the shell
// starts there. The debugfs path is an alias, as on Linux.
const (
	tracefsMount = "/sys/kernel/tracing"
	debugMount   = "/sys/kernel/debug/tracing"
)

// shell connects an interpreter to one emulated tracefs.
type shell struct {
	fs      *tracefs.FS
	scratch string // empty directory external commands run in
	// script is the name of the script file being run ("" for sh -c
	// and stdin): ash's messages for failed redirections then read
	// "SCRIPT: line N: can't create ...".
	script string
}

// newShell prepares an interpreter over fsys. cleanup removes its scratch
// directory.
func newShell(fsys *tracefs.FS, params []string, script string, stdin io.Reader, stdout, stderr io.Writer) (r *interp.Runner, cleanup func(), err error) {
	scratch, err := os.MkdirTemp("", "ktrace-sh-")
	if err != nil {
		return nil, nil, fmt.Errorf("scratch directory: %w", err)
	}
	cleanup = func() { os.RemoveAll(scratch) }
	s := &shell{fs: fsys, scratch: scratch, script: script}
	opts := []interp.RunnerOption{
		interp.StdIO(stdin, stdout, stderr),
		interp.Env(expand.ListEnviron(append(os.Environ(), "PWD="+tracefsMount)...)),
		interp.Dir(scratch),
		interp.OpenHandler(s.open),
		interp.StatHandler(s.stat),
		interp.ReadDirHandler2(s.readDir),
		interp.AccessHandler(s.access),
		interp.CallHandler(s.call),
		interp.ExecHandlers(s.execMiddleware),
	}
	if len(params) > 0 {
		opts = append(opts, interp.Params(append([]string{"--"}, params...)...))
	}
	r, err = interp.New(opts...)
	if err != nil {
		cleanup()
		return nil, nil, fmt.Errorf("shell: %w", err)
	}
	// The start directory is the emulated mount, which need not exist on
	// the host; Dir() would stat it, so set it after construction.
	r.Dir = tracefsMount
	return r, cleanup, nil
}

// exitStatus turns a Run error into a status; other errors stay errors.
func exitStatus(err error) (int, error) {
	if err == nil {
		return 0, nil
	}
	if st, ok := interp.IsExitStatus(err); ok {
		return int(st), nil
	}
	return 0, err
}

// StatusSyntax is the status of a command line that does not parse.
const StatusSyntax = 2

// Run runs file with positional parameters params over fsys and returns
// its exit status.
func Run(ctx context.Context, fsys *tracefs.FS, file *syntax.File, params []string, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	return runScript(ctx, fsys, file, params, "", stdin, stdout, stderr)
}

// runScript is Run of the script file named script ("" when file is no file:
// sh -c, stdin).
func runScript(ctx context.Context, fsys *tracefs.FS, file *syntax.File, params []string, script string, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	r, cleanup, err := newShell(fsys, params, script, stdin, stdout, stderr)
	if err != nil {
		return 0, err
	}
	defer cleanup()
	if script != "" {
		markRedirects(file)
	}
	return exitStatus(r.Run(ctx, file))
}

// RunInteractive reads commands from a terminal, prompting on stderr
// ("$ ", "> " for continuation lines), until EOF or exit.
func RunInteractive(ctx context.Context, fsys *tracefs.FS, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	r, cleanup, err := newShell(fsys, nil, "", stdin, stdout, stderr)
	if err != nil {
		return 0, err
	}
	defer cleanup()
	parser := syntax.NewParser(syntax.Variant(syntax.LangBash))
	status := 0
	fmt.Fprint(stderr, "$ ")
	for stmts, perr := range parser.InteractiveSeq(stdin) {
		if perr != nil {
			fmt.Fprintf(stderr, "sh: %v\n", perr)
			status = StatusSyntax
			fmt.Fprint(stderr, "$ ")
			continue
		}
		if parser.Incomplete() {
			fmt.Fprint(stderr, "> ")
			continue
		}
		for _, st := range stmts {
			st, err := exitStatus(r.Run(ctx, st))
			if err != nil {
				return 0, err
			}
			status = st
			if r.Exited() {
				return status, nil
			}
		}
		fmt.Fprint(stderr, "$ ")
	}
	fmt.Fprintln(stderr)
	return status, nil
}

// emulated maps an absolute path to a tracefs path; ok is false for paths
// outside the mount.
func emulated(abs string) (string, bool) {
	abs = filepath.Clean(abs)
	for _, m := range []string{tracefsMount, debugMount} {
		if abs == m {
			return ".", true
		}
		if rest, ok := strings.CutPrefix(abs, m+"/"); ok {
			return rest, true
		}
	}
	return "", false
}

func absIn(dir, p string) string {
	if p == "" {
		return dir
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(dir, p)
	}
	return filepath.Clean(p)
}

// cErrno prints an errno with the C library's text, as busybox does.
type cErrno struct{ errno syscall.Errno }

func (e cErrno) Error() string { return grammar.Strerror(e.errno) }
func (e cErrno) Unwrap() error { return e.errno }

// shPathError makes a busybox-like message from a tracefs open error:
// "sh: can't create kprobe_events: Device or resource busy".
// Like busybox's errmsg, ENOENT and ENOTDIR read "no such file" for an
// input redirection and "nonexistent directory" for an output one.
func shPathError(name string, flag int, err error) error {
	return shPathErrorAt("sh", name, flag, err)
}

// shPathErrorAt is shPathError with ash's prefix: "sh", or in a script
// file "SCRIPT: line N".
func shPathErrorAt(prefix, name string, flag int, err error) error {
	op, missing := prefix+": can't open", "no such file"
	if flag&(os.O_WRONLY|os.O_RDWR) != 0 {
		op, missing = prefix+": can't create", "nonexistent directory"
	}
	e := grammar.ErrnoOf(err)
	if e == syscall.ENOENT || e == syscall.ENOTDIR {
		return &fs.PathError{Op: op, Path: name, Err: shText{missing, e}}
	}
	return &fs.PathError{Op: op, Path: name, Err: cErrno{e}}
}

// shText is an errno that busybox prints with its own words.
type shText struct {
	text  string
	errno syscall.Errno
}

func (e shText) Error() string { return e.text }
func (e shText) Unwrap() error { return e.errno }

func (s *shell) open(ctx context.Context, p string, flag int, perm os.FileMode) (io.ReadWriteCloser, error) {
	hc := interp.HandlerCtx(ctx)
	prefix := "sh"
	if line, rest, ok := cutRedirectMark(p); ok {
		p = rest
		// ash (with a script file): arg0, the script, and errlinno.
		prefix = fmt.Sprintf("%s: line %d", s.script, line)
	}
	abs := absIn(hc.Dir, p)
	rel, ok := emulated(abs)
	if !ok {
		f, err := os.OpenFile(abs, flag, perm)
		if err != nil && prefix != "sh" {
			return nil, shPathErrorAt(prefix, p, flag, err)
		}
		return f, err
	}
	h, err := s.fs.Open(rel, flag)
	if err != nil {
		return nil, shPathErrorAt(prefix, p, flag, err)
	}
	return &shFile{File: h}, nil
}

// shFile is an emulated file opened by a redirection. Normally each Write
// is one write(2); while a command that composes its output (echo, printf,
// the built-in utilities) runs, writes are collected and issued as a
// single write(2) when it finishes, as busybox's echo does.
type shFile struct {
	*tracefs.File
	buffering bool
	buf       bytes.Buffer
}

func (f *shFile) Write(p []byte) (int, error) {
	if f.buffering {
		return f.buf.Write(p)
	}
	return f.File.WriteFull(p)
}

// flush issues the collected output as one write(2).
func (f *shFile) flush() error {
	f.buffering = false
	if f.buf.Len() == 0 {
		return nil
	}
	data := f.buf.Bytes()
	f.buf.Reset()
	_, err := f.File.WriteFull(data)
	return err
}

func (s *shell) stat(ctx context.Context, name string, follow bool) (fs.FileInfo, error) {
	hc := interp.HandlerCtx(ctx)
	abs := absIn(hc.Dir, name)
	if rel, ok := emulated(abs); ok {
		return s.fs.Stat(rel)
	}
	if isMountAncestor(abs) {
		return mountDirInfo(abs), nil
	}
	if follow {
		return os.Stat(abs)
	}
	return os.Lstat(abs)
}

func (s *shell) readDir(ctx context.Context, name string) ([]fs.DirEntry, error) {
	hc := interp.HandlerCtx(ctx)
	abs := absIn(hc.Dir, name)
	if rel, ok := emulated(abs); ok {
		return s.fs.ReadDir(rel)
	}
	return os.ReadDir(abs)
}

func (s *shell) access(ctx context.Context, name string, mode interp.AccessMode) error {
	hc := interp.HandlerCtx(ctx)
	abs := absIn(hc.Dir, name)
	if rel, ok := emulated(abs); ok {
		fi, err := s.fs.Stat(rel)
		if err != nil {
			return err
		}
		// The shell's user is the emulated tracefs's root, whom
		// generic_permission lets read and write anything, search every
		// directory, and execute a file only when it has an execute bit
		// (tracefs files have none).
		if mode&interp.AccessExec != 0 && !fi.IsDir() && fi.Mode()&0o111 == 0 {
			return &fs.PathError{Op: "access", Path: name, Err: syscall.EACCES}
		}
		return nil
	}
	if isMountAncestor(abs) {
		return nil
	}
	return syscall.Access(abs, uint32(mode))
}

// isMountAncestor reports whether abs is a directory on the way to the
// mount (/sys, /sys/kernel, /sys/kernel/debug), which may be missing on
// the host but must exist for `cd ..` out of the mount.
func isMountAncestor(abs string) bool {
	for _, m := range []string{tracefsMount, debugMount} {
		if strings.HasPrefix(m, abs+"/") {
			return true
		}
	}
	return false
}

// mountDirInfo describes a directory on the way to the mount: the host's
// own when it has one, else a plain directory.
func mountDirInfo(abs string) fs.FileInfo {
	if fi, err := os.Stat(abs); err == nil && fi.IsDir() {
		return fi
	}
	return dirInfo(filepath.Base(abs))
}

// dirInfo is a stand-in directory.
type dirInfo string

func (d dirInfo) Name() string       { return string(d) }
func (d dirInfo) Size() int64        { return 0 }
func (d dirInfo) Mode() fs.FileMode  { return fs.ModeDir | 0o755 }
func (d dirInfo) ModTime() time.Time { return time.Time{} }
func (d dirInfo) IsDir() bool        { return true }
func (d dirInfo) Sys() any           { return nil }

// builtinPrefix marks a call redirected from a shell builtin to the exec
// handler so its output can be written as one write(2).
const builtinPrefix = "\x00ktrace-builtin:"

// call routes echo and printf whose output goes to an emulated file
// through the exec handler (see execMiddleware).
func (s *shell) call(ctx context.Context, args []string) ([]string, error) {
	hc := interp.HandlerCtx(ctx)
	switch args[0] {
	case "kill":
		// The interpreter knows kill's name but has no kill of its own.
		return append([]string{killCommand}, args[1:]...), nil
	case "printf":
		// Nor a printf with precisions.
		return append([]string{printfCommand}, args[1:]...), nil
	}
	if _, ok := hc.Stdout.(*shFile); ok && args[0] == "echo" {
		out := append([]string{builtinPrefix + args[0]}, args[1:]...)
		return out, nil
	}
	return args, nil
}

func (s *shell) execMiddleware(next interp.ExecHandlerFunc) interp.ExecHandlerFunc {
	return func(ctx context.Context, args []string) error {
		hc := interp.HandlerCtx(ctx)
		switch args[0] {
		case killCommand:
			return shKill(hc.Stdout, hc.Stderr, args[1:])
		case printfCommand:
			// One write(2), as busybox's stdio flush; a failed one is
			// status 1 and nothing said (seen on 6.1 and 6.12).
			w := hc.Stdout
			if f, ok := hc.Stdout.(*shFile); ok {
				w = writerFunc(f.File.WriteFull)
			}
			if st := shPrintf(w, hc.Stderr, args[1:]); st != 0 {
				return interp.ExitStatus(uint8(st))
			}
			return nil
		}
		if name, ok := strings.CutPrefix(args[0], builtinPrefix); ok {
			f := hc.Stdout.(*shFile)
			f.buffering = true
			err := hc.Builtin(ctx, append([]string{name}, args[1:]...))
			if ferr := f.flush(); ferr != nil {
				// busybox's echo reports the failed write; its printf
				// only fails with status 1 (seen on 6.1 and 6.12).
				if name == "echo" {
					fmt.Fprintf(hc.Stderr, "sh: write error: %s\n", grammar.Strerror(grammar.ErrnoOf(ferr)))
				}
				return interp.ExitStatus(1)
			}
			return err
		}
		if args[0] == "sudo" {
			// The shell's user is already the emulated tracefs's root:
			// `echo LINE | sudo tee -a kprobe_events` runs tee.
			rest, err := sudoCommand(args[1:])
			if err != nil {
				fmt.Fprintf(hc.Stderr, "sudo: %v\n", err)
				return interp.ExitStatus(1)
			}
			args = rest
		}
		if u, ok := utilities[args[0]]; ok && s.wantsUtility(hc, args) {
			return s.runUtility(ctx, hc, u, args)
		}
		return s.external(ctx, hc, args)
	}
}

// wantsUtility reports whether a cat/ls/grep/head/tail/wc call involves the
// emulated tracefs: the current directory is in it, or an operand names it.
func (s *shell) wantsUtility(hc interp.HandlerContext, args []string) bool {
	if _, ok := emulated(hc.Dir); ok {
		return true
	}
	for _, a := range args[1:] {
		if _, ok := emulated(absIn(hc.Dir, a)); ok {
			return true
		}
	}
	if _, ok := hc.Stdout.(*shFile); ok {
		return true
	}
	_, ok := hc.Stdin.(*shFile)
	return ok
}

// namesTracefs reports whether an external command's operand would reach
// the tracefs: it spells out a tracefs mount path, or, relative to the
// shell's directory, names a file that exists in the emulated tree. Options
// and operands that name nothing there (cut -c1-15, sort -k2) pass.
func (s *shell) namesTracefs(dir, a string) bool {
	if strings.Contains(a, tracefsMount) || strings.Contains(a, debugMount) {
		return true
	}
	if a == "" || strings.HasPrefix(a, "-") {
		return false
	}
	rel, ok := emulated(absIn(dir, a))
	if !ok {
		return false
	}
	_, err := s.fs.Stat(rel)
	return err == nil
}

// external runs a real program. It runs in the scratch directory while
// the shell is inside the emulated tracefs, and may not name tracefs paths
// (the host's real tracefs must stay untouched).
func (s *shell) external(ctx context.Context, hc interp.HandlerContext, args []string) error {
	for _, a := range args[1:] {
		if s.namesTracefs(hc.Dir, a) {
			fmt.Fprintf(hc.Stderr, "sh: %s: external commands cannot reach the emulated tracefs (%s)\n", args[0], a)
			return interp.ExitStatus(126)
		}
	}
	dir := hc.Dir
	if _, ok := emulated(dir); ok || isMountAncestor(dir) {
		dir = s.scratch
	}
	path, err := interp.LookPathDir(dir, hc.Env, args[0])
	if err != nil {
		fmt.Fprintf(hc.Stderr, "sh: %s: not found\n", args[0])
		return interp.ExitStatus(127)
	}
	c := exec.CommandContext(ctx, path)
	c.Args = args
	c.Dir = dir
	for name, vr := range hc.Env.Each {
		if vr.Exported && vr.Kind == expand.String {
			c.Env = append(c.Env, name+"="+vr.String())
		}
	}
	c.Stdin = hc.Stdin
	c.Stderr = hc.Stderr
	var out *shFile
	if f, ok := hc.Stdout.(*shFile); ok {
		out = f
		f.buffering = true
	}
	c.Stdout = hc.Stdout
	err = c.Run()
	if out != nil {
		if ferr := out.flush(); ferr != nil {
			fmt.Fprintf(hc.Stderr, "%s: write error: %s\n", args[0], grammar.Strerror(grammar.ErrnoOf(ferr)))
			return interp.ExitStatus(1)
		}
	}
	var ee *exec.ExitError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ee):
		if ee.ExitCode() < 0 {
			return interp.ExitStatus(128 + 9)
		}
		return interp.ExitStatus(ee.ExitCode())
	case ctx.Err() != nil:
		return ctx.Err()
	}
	fmt.Fprintf(hc.Stderr, "sh: %s: %v\n", args[0], err)
	return interp.ExitStatus(126)
}

// sudoCommand returns the command a sudo invocation runs, its options
// dropped (those taking a value with it): inside `ktrace sh` the user is
// the emulated tracefs's root already.
func sudoCommand(args []string) ([]string, error) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			args = args[i+1:]
			i = -1
			if len(args) == 0 {
				return nil, fmt.Errorf("no command")
			}
			return args, nil
		case a == "-u" || a == "-g" || a == "-C" || a == "-D" || a == "-h" || a == "-p" || a == "-r" || a == "-t" || a == "-U":
			i++
		case strings.HasPrefix(a, "-"):
		default:
			return args[i:], nil
		}
	}
	return nil, fmt.Errorf("no command")
}

// writerFunc is an io.Writer of a write function.
type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(b []byte) (int, error) { return f(b) }
