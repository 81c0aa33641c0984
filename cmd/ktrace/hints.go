package main

import (
	"github.com/ktrace-dev/ktrace/hints"
)

// hinter makes hints in the env's model and syntax.
func (e *env) hinter() *hints.Hinter { return &hints.Hinter{Model: e.model, Dialect: e.dialect} }
