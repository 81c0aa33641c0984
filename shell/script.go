package shell

import (
	"context"
	"io"
	"os"
	"strings"

	"github.com/ktrace-dev/ktrace/tracefs"
	"golang.org/x/term"
	"mvdan.cc/sh/v3/syntax"
)

// Script is what `ktrace sh` runs: a script parsed whole before anything
// is set up, so a syntax error runs nothing, or a terminal read line by
// line.
type Script struct {
	file   *syntax.File
	params []string
	tty    io.Reader
	// named: the script is a file, whose name and line busybox's ash
	// puts before the messages of failed redirections.
	named bool
}

// Parse reads the script src, named name, with positional parameters
// params.
func Parse(src io.Reader, name string, params []string) (*Script, error) {
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(src, name)
	if err != nil {
		return nil, err
	}
	return &Script{file: f, params: params}, nil
}

// OpenError is a script file Load could not open.
type OpenError struct{ Err error }

func (e *OpenError) Error() string { return e.Err.Error() }
func (e *OpenError) Unwrap() error { return e.Err }

// Load reads the script `ktrace sh` runs: the text *command when it is
// given (sh -c: args are $0 and the positional parameters), else the file
// args[0] with parameters args[1:], else stdin, typed line by line when
// it is a terminal. A file that does not open is an *OpenError.
func Load(command *string, args []string, stdin io.Reader) (*Script, error) {
	switch {
	case command != nil:
		name, params := "sh", []string(nil)
		if len(args) > 0 {
			name, params = args[0], args[1:]
		}
		return Parse(strings.NewReader(*command), name, params)
	case len(args) > 0:
		f, err := os.Open(args[0])
		if err != nil {
			return nil, &OpenError{err}
		}
		defer f.Close()
		s, err := Parse(f, args[0], args[1:])
		if s != nil {
			s.named = true
		}
		return s, err
	}
	if f, ok := stdin.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		return Interactive(f), nil
	}
	return Parse(stdin, "sh", nil)
}

// Interactive is the script a terminal types (RunInteractive).
func Interactive(tty io.Reader) *Script { return &Script{tty: tty} }

// Run runs s over fsys and returns its exit status. A script reads
// stdin; an interactive one reads its terminal.
func (s *Script) Run(ctx context.Context, fsys *tracefs.FS, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	if s.tty != nil {
		return RunInteractive(ctx, fsys, s.tty, stdout, stderr)
	}
	if s.named {
		return runScript(ctx, fsys, s.file, s.params, s.file.Name, stdin, stdout, stderr)
	}
	return Run(ctx, fsys, s.file, s.params, stdin, stdout, stderr)
}
