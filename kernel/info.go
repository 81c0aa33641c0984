package kernel

import (
	"fmt"
	"io"

	"github.com/ktrace-dev/ktrace/grammar"
)

// Info describes a model as `ktrace kernel info` shows it: where it
// comes from, the release, the syntax it is read with, what optional data
// it has, and every fact with its source.
type Info struct {
	Source   string `json:"source"`
	Release  string `json:"release"`
	Version  string `json:"version"`
	Arch     string `json:"arch"`
	CPUs     int    `json:"cpus"`
	Syntax   string `json:"syntax"`
	Symbols  int    `json:"symbols"`
	BTF      bool   `json:"btf"`
	BTFArgs  bool   `json:"btf_args"`
	Fprobe   bool   `json:"fprobe"`
	BTFError string `json:"btf_error,omitempty"`
	Image    string `json:"image"`
	Text     string `json:"text"`
	Facts    []Fact `json:"facts"`
}

// Info describes m read with dialect d. noKprobes, when not empty, is why
// the running kernel has no kprobes: the blacklist fact then says so.
func (m *Model) Info(d *grammar.Dialect, noKprobes string) Info {
	major, minor, patch := m.KernelVersion()
	info := Info{
		Source:  m.Source(),
		Release: m.Release(),
		Version: fmt.Sprintf("%d.%d.%d", major, minor, patch),
		Arch:    m.Arch().Name,
		CPUs:    m.CPUs(),
		Syntax:  d.Name,
		Symbols: m.NumSymbols(),
		BTF:     m.BTF() != nil,
		BTFArgs: d.BTFArgs,
		Fprobe:  d.Fprobe,
	}
	if err := m.BTFError(); err != nil {
		info.BTFError = err.Error()
	}
	// Asking for the text opens the running kernel's text reader, so its
	// fact is among the facts below.
	info.Text = "none (instruction boundaries and ENDBR64 not checked)"
	if m.TextKnown() {
		info.Text = "yes"
	}
	switch {
	case m.HasImage():
		info.Image = "yes"
	case m.Source() == "embedded":
		info.Image = "no (a text table computed from the 6.12.95 image stands in for it)"
	case m.Source() == "host":
		info.Image = "no (the running kernel's text stands in for it where readable)"
	default:
		info.Image = "no (the snapshot has no vmlinuz)"
	}
	info.Facts = m.Facts()
	if noKprobes != "" && m.Source() == "host" {
		for i, f := range info.Facts {
			if f.Name == "kprobe blacklist" {
				info.Facts[i].Source = "none: " + noKprobes
			}
		}
	}
	return info
}

// WriteText writes the description as aligned "name: value" lines, then
// the facts.
func (i *Info) WriteText(out io.Writer) {
	fmt.Fprintf(out, "source:   %s\n", i.Source)
	fmt.Fprintf(out, "release:  %s\n", i.Release)
	fmt.Fprintf(out, "version:  %s\n", i.Version)
	fmt.Fprintf(out, "arch:     %s\n", i.Arch)
	fmt.Fprintf(out, "cpus:     %d\n", i.CPUs)
	fmt.Fprintf(out, "syntax:   %s (BTF args %v, fprobe %v)\n", i.Syntax, i.BTFArgs, i.Fprobe)
	fmt.Fprintf(out, "symbols:  %d\n", i.Symbols)
	if i.BTF {
		fmt.Fprintf(out, "btf:      yes\n")
	} else {
		fmt.Fprintf(out, "btf:      no (%s)\n", i.BTFError)
	}
	fmt.Fprintf(out, "image:    %s\n", i.Image)
	fmt.Fprintf(out, "text:     %s\n", i.Text)
	fmt.Fprintf(out, "facts:\n")
	for _, f := range i.Facts {
		fmt.Fprintf(out, "  %-22s %-14s %s\n", f.Name, f.Value, f.Source)
	}
}
