package shell

import (
	"context"
	"io"

	"github.com/ktrace-dev/ktrace/tracefs"
	"mvdan.cc/sh/v3/syntax"
)

// Script is what `ktrace sh` runs: a script parsed whole before anything
// is set up, so a syntax error runs nothing, or a terminal read line by
// line.
type Script struct {
	file   *syntax.File
	params []string
	tty    io.Reader
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

// Interactive is the script a terminal types (RunInteractive).
func Interactive(tty io.Reader) *Script { return &Script{tty: tty} }

// Run runs s over fsys and returns its exit status. A script reads
// stdin; an interactive one reads its terminal.
func (s *Script) Run(ctx context.Context, fsys *tracefs.FS, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	if s.tty != nil {
		return RunInteractive(ctx, fsys, s.tty, stdout, stderr)
	}
	return Run(ctx, fsys, s.file, s.params, stdin, stdout, stderr)
}
