package main

import (
	"io"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// Every section of help.txtar names a command, and every command but the
// ones cobra adds has its long help or examples.
func TestHelpSections(t *testing.T) {
	root := newRootCmd(strings.NewReader(""), io.Discard, io.Discard)
	used := map[string]bool{}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		name := strings.TrimPrefix(c.CommandPath(), "ktrace ")
		used[name], used[name+" (examples)"] = true, true
		if c.Example == "" && c.Name() != "kernel" {
			t.Errorf("%s: no examples", c.CommandPath())
		}
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(root)
	for name := range helpSections() {
		if !used[name] {
			t.Errorf("help.txtar: section %q names no command", name)
		}
	}
}
