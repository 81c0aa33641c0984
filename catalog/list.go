package catalog

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/ktrace-dev/ktrace/grammar"
	"github.com/ktrace-dev/ktrace/kernel"
)

// List writes `ktrace funcs` (tracepoints: `ktrace funcs -t`): the
// functions (tracepoints) of m matching globs on out, as text or JSON
// Lines, and the listing's notes on notes, a line each ("ktrace: " before
// all but hints). A malformed glob is an ErrBadGlob; globs that match
// nothing are an ErrNotFound naming them, after the (empty) listing.
func List(out, notes io.Writer, m *kernel.Model, d *grammar.Dialect, globs []string, tracepoints, asJSON bool) error {
	if tracepoints {
		tps, ns, err := Tracepoints(m, d, globs)
		if errors.Is(err, ErrBadGlob) {
			err = fmt.Errorf("funcs -t: %w", err)
		}
		return writeListing(notes, "tracepoint", globs, tps, ns, err, func() error { return WriteTracepoints(out, tps, asJSON) })
	}
	fs, ns, err := Functions(m, d, globs)
	return writeListing(notes, "function", globs, fs, ns, err, func() error { return WriteFuncs(out, fs, asJSON) })
}

// writeListing prints the notes, then (unless finding the items failed
// with err) the items of a listing with write.
func writeListing[T any](notes io.Writer, what string, globs []string, items []T, ns []string, err error, write func() error) error {
	for _, n := range ns {
		if !strings.HasPrefix(n, "hint: ") {
			n = "ktrace: " + n
		}
		fmt.Fprintln(notes, n)
	}
	if err != nil {
		return err
	}
	if err := write(); err != nil {
		return fmt.Errorf("encode: %w", err)
	}
	if len(items) == 0 && len(globs) > 0 {
		return &notFound{fmt.Sprintf("no %s of the model matches %s", what, quoteAll(globs))}
	}
	return nil
}

// quoteAll is the globs, each in single quotes, space-separated.
func quoteAll(s []string) string {
	out := make([]string, len(s))
	for i, x := range s {
		out[i] = "'" + x + "'"
	}
	return strings.Join(out, " ")
}
