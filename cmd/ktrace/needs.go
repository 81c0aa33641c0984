package main

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/ktrace-dev/ktrace/events"
	"github.com/ktrace-dev/ktrace/grammar"
	"github.com/ktrace-dev/ktrace/kernel"
)

// feature is a probe syntax that a kernel row of the dialect table may
// lack and that ktrace's eBPF backend runs on any kernel.
type feature struct {
	name   string
	enable func(*grammar.Dialect)
	has    func(*grammar.Dialect) bool
}

var features = []feature{
	{"fprobe events (f lines, Linux 6.12's dynamic_events)",
		func(d *grammar.Dialect) { d.Fprobe, d.FprobeMaxactive, d.SanitizeStar = true, true, true },
		func(d *grammar.Dialect) bool { return d.Fprobe }},
	{"$argN on return probes (Linux 6.10+)",
		func(d *grammar.Dialect) { d.RetprobeArgN = true },
		func(d *grammar.Dialect) bool { return d.RetprobeArgN }},
	{"%pd/%pD dentry and file names (Linux 6.9+)",
		func(d *grammar.Dialect) { d.DentryArgs = true },
		func(d *grammar.Dialect) bool { return d.DentryArgs }},
	{"the 6.5 fetch-argument parser (char type, $retval prefixes)",
		since65,
		func(d *grammar.Dialect) bool { return d.Major > 6 || (d.Major == 6 && d.Minor >= 5) }},
	{"BTF arguments ($arg*, parameter names, ->fields, BTF-typed $retval; Linux 6.5+)",
		func(d *grammar.Dialect) { d.BTFArgs = true; since65(d) },
		func(d *grammar.Dialect) bool { return d.BTFArgs }},
}

// since65 moves a dialect row to the 6.5 parser, which BTF arguments and the
// char type came with.
func since65(d *grammar.Dialect) {
	if d.Major == 6 && d.Minor < 5 {
		d.Minor = 5
	}
}

// lineNeeds tells which kernel features a line, accepted under the newest
// syntax, needs beyond what the model's own kernel accepts. It returns nil
// when the model's kernel accepts the line as it is. When the difference
// is not one of the named features, it names the kernel's own verdict.
func lineNeeds(m *kernel.Model, line string) []string {
	major, minor, _ := m.KernelVersion()
	own := grammar.DialectFor(major, minor)
	accepts := func(d *grammar.Dialect) (bool, error) {
		err := events.NewRegistry(m, d).Exec(events.DynamicEvents, line)
		return err == nil, err
	}
	ok, ownErr := accepts(own)
	if ok || own.Name == grammar.Latest.Name {
		return nil
	}
	// A line 6.12's syntax rejects as well (e.g. a removal of an event
	// this fresh tracefs does not have) needs no newer kernel.
	if latest, _ := accepts(grammar.Latest); !latest {
		return nil
	}
	// Turn the missing features on one by one until the line passes, then
	// drop every one it passes without.
	d := *own
	var on []feature
	passed := false
	for _, f := range features {
		if f.has(&d) {
			continue
		}
		f.enable(&d)
		on = append(on, f)
		if passed, _ = accepts(&d); passed {
			break
		}
	}
	var names []string
	if passed {
		for i, f := range on {
			trial := *own
			for j, g := range on {
				if j != i {
					g.enable(&trial)
				}
			}
			if without, _ := accepts(&trial); !without {
				names = append(names, f.name)
			}
		}
	}
	if len(names) == 0 {
		why := "rejected"
		var we *events.WriteError
		if errors.As(ownErr, &we) && we.Last() != nil {
			why = we.Last().Msg
		}
		names = append(names, fmt.Sprintf("Linux 6.12's rules (Linux %s says: %s)", own.Name, why))
	}
	return names
}

// reportNeeds prints, on w, the features line needs beyond the model
// kernel's own syntax (one line, nothing when it needs none) and returns
// them.
func reportNeeds(w io.Writer, m *kernel.Model, line string) []string {
	n := lineNeeds(m, line)
	if len(n) > 0 {
		fmt.Fprintf(w, "ktrace: %q needs %s\n", line, strings.Join(n, "; "))
	}
	return n
}
