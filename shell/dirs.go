package shell

import (
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/ktrace-dev/ktrace/grammar"
)

// mkdir, rmdir and mktemp -d reach the emulated tracefs too: a tracing
// instance is made with `mkdir instances/NAME` and removed with rmdir, and
// ftracetest makes its instances with `mktemp -d instances/NAME.XXXXXX`.

func init() {
	utilities["mkdir"] = utilMkdir
	utilities["rmdir"] = utilRmdir
	utilities["mktemp"] = utilMktemp
}

// mkdirAt makes one directory, emulated or real.
func (u *utilCtx) mkdirAt(name string) error {
	abs := absIn(u.hc.Dir, name)
	if rel, ok := emulated(abs); ok {
		return u.s.fs.Mkdir(rel)
	}
	return os.Mkdir(abs, 0o777)
}

func utilMkdir(u *utilCtx, args []string) int {
	parents := false
	var dirs []string
	for _, a := range args {
		switch {
		case a == "-p":
			parents = true
		case strings.HasPrefix(a, "-") && len(a) > 1:
			u.errorf("unrecognized option '%s'", a)
			return 1
		default:
			dirs = append(dirs, a)
		}
	}
	st := 0
	for _, d := range dirs {
		err := u.mkdirAt(d)
		if err != nil && parents && grammar.ErrnoOf(err) == syscall.EEXIST {
			err = nil
		}
		if err != nil {
			// busybox: "mkdir: can't create directory 'X': File exists".
			u.errorf("can't create directory '%s': %s", d, grammar.Strerror(grammar.ErrnoOf(err)))
			st = 1
		}
	}
	return st
}

func utilRmdir(u *utilCtx, args []string) int {
	st := 0
	for _, d := range args {
		abs := absIn(u.hc.Dir, d)
		var err error
		if rel, ok := emulated(abs); ok {
			err = u.s.fs.Rmdir(rel)
		} else {
			err = os.Remove(abs)
		}
		if err != nil {
			// busybox: "rmdir: 'X': Device or resource busy".
			u.errorf("'%s': %s", d, grammar.Strerror(grammar.ErrnoOf(err)))
			st = 1
		}
	}
	return st
}

// utilMktemp is busybox's mktemp: -d makes a directory, -p DIR or -t put
// the template in DIR or $TMPDIR, trailing X's become random characters;
// the made path is printed.
func utilMktemp(u *utilCtx, args []string) int {
	dir, quiet, useTmp := false, false, false
	prefix := ""
	template := ""
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "-d":
			dir = true
		case a == "-q":
			quiet = true
		case a == "-t":
			useTmp = true
		case a == "-p" && i+1 < len(args):
			i++
			prefix = args[i]
		case strings.HasPrefix(a, "-") && len(a) > 1:
			u.errorf("unrecognized option '%s'", a)
			return 1
		default:
			template = a
		}
	}
	if template == "" {
		template, useTmp = "tmp.XXXXXX", true
	}
	if useTmp && prefix == "" {
		if prefix = os.Getenv("TMPDIR"); prefix == "" {
			prefix = "/tmp"
		}
	}
	if prefix != "" {
		template = filepath.Join(prefix, template)
	}
	n := len(template) - len(strings.TrimRight(template, "X"))
	if n < 3 {
		if !quiet {
			u.errorf("Invalid argument")
		}
		return 1
	}
	const letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	var err error
	for try := 0; try < 100; try++ {
		b := make([]byte, n)
		if _, err = rand.Read(b); err != nil {
			break
		}
		for i := range b {
			b[i] = letters[int(b[i])%len(letters)]
		}
		name := template[:len(template)-n] + string(b)
		if dir {
			err = u.mkdirAt(name)
		} else {
			err = u.createAt(name)
		}
		if err == nil {
			fmt.Fprintln(u.out, name)
			return 0
		}
		if grammar.ErrnoOf(err) != syscall.EEXIST { // another name is tried only on EEXIST
			break
		}
	}
	if !quiet {
		u.errorf("%s", grammar.Strerror(grammar.ErrnoOf(err)))
	}
	return 1
}

// createAt makes a new empty file, emulated (where tracefs refuses it)
// or real.
func (u *utilCtx) createAt(name string) error {
	abs := absIn(u.hc.Dir, name)
	if rel, ok := emulated(abs); ok {
		h, err := u.s.fs.Open(rel, os.O_RDWR|os.O_CREATE|os.O_EXCL)
		if err != nil {
			return err
		}
		return h.Close()
	}
	f, err := os.OpenFile(abs, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	return f.Close()
}
