package main

import (
	_ "embed"
	"strings"

	"github.com/rogpeppe/go-internal/txtar"
	"github.com/spf13/cobra"
)

// helpArchive holds each command's long help and examples, as prose
// apart from the code that wires the commands.
//
//go:embed help.txtar
var helpArchive []byte

// helpSections are helpArchive's sections by name: "VERB" (the command
// path without "ktrace ", or "ktrace" for the root) and "VERB (examples)".
func helpSections() map[string]string {
	out := map[string]string{}
	for _, f := range txtar.Parse(helpArchive).Files {
		out[f.Name] = strings.TrimSuffix(string(f.Data), "\n")
	}
	return out
}

// applyHelp gives cmd and its subcommands their long help and examples.
func applyHelp(cmd *cobra.Command, sections map[string]string) {
	name := strings.TrimPrefix(cmd.CommandPath(), "ktrace ")
	if t, ok := sections[name]; ok {
		cmd.Long = t
	}
	if t, ok := sections[name+" (examples)"]; ok {
		cmd.Example = t
	}
	for _, c := range cmd.Commands() {
		applyHelp(c, sections)
	}
}
