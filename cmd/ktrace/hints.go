package main

import (
	"github.com/ktrace-dev/ktrace/hints"
	"github.com/ktrace-dev/ktrace/tracefs"
)

// hintsOf is hints for a check result.
func (e *env) hintsOf(r *checkResult, f tracefs.ControlFile) []string {
	if r.OK {
		return nil
	}
	return e.hinter().For(r.Line, f, r.Error)
}

// hinter makes hints in the env's model and syntax.
func (e *env) hinter() *hints.Hinter { return &hints.Hinter{Model: e.model, Dialect: e.dialect} }
