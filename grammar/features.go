package grammar

// Feature is a probe syntax that a row of the dialect table may lack and
// that ktrace's eBPF backend runs on any kernel: its name as messages give
// it, how to turn it on in a row, and whether a row has it.
type Feature struct {
	Name   string
	Enable func(*Dialect)
	Has    func(*Dialect) bool
}

// Features are the syntaxes newer releases brought, in the order a
// line's needs are looked for.
var Features = []Feature{
	{"fprobe events (f lines, Linux 6.12's dynamic_events)",
		func(d *Dialect) { d.Fprobe, d.FprobeMaxactive, d.SanitizeStar = true, true, true },
		func(d *Dialect) bool { return d.Fprobe }},
	{"$argN on return probes (Linux 6.10+)",
		func(d *Dialect) { d.RetprobeArgN = true },
		func(d *Dialect) bool { return d.RetprobeArgN }},
	{"%pd/%pD dentry and file names (Linux 6.9+)",
		func(d *Dialect) { d.DentryArgs = true },
		func(d *Dialect) bool { return d.DentryArgs }},
	{"the 6.5 fetch-argument parser (char type, $retval prefixes)",
		since65,
		func(d *Dialect) bool { return d.Major > 6 || (d.Major == 6 && d.Minor >= 5) }},
	{"BTF arguments ($arg*, parameter names, ->fields, BTF-typed $retval; Linux 6.5+)",
		func(d *Dialect) { d.BTFArgs = true; since65(d) },
		func(d *Dialect) bool { return d.BTFArgs }},
}

// since65 moves a dialect row to the 6.5 parser, which BTF arguments and the
// char type came with.
func since65(d *Dialect) {
	if d.Major == 6 && d.Minor < 5 {
		d.Minor = 5
	}
}
