package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/ktrace-dev/ktrace/events"
	"github.com/ktrace-dev/ktrace/kernel"
)

// reportNeeds prints, on w, the features line needs beyond the model
// kernel's own syntax (one line, nothing when it needs none) and returns
// them.
func reportNeeds(w io.Writer, m *kernel.Model, line string) []string {
	n := events.LineNeeds(m, line)
	if len(n) > 0 {
		fmt.Fprintf(w, "ktrace: %q needs %s\n", line, strings.Join(n, "; "))
	}
	return n
}
