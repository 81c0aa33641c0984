package kernel

import (
	"sort"
	"strings"
)

// FtraceRecord is one function ftrace can trace: one line of
// available_filter_functions, one dyn_ftrace record in the kernel.
type FtraceRecord struct {
	Name   string
	Module string // "" for vmlinux
	// Addr is the function's kallsyms address (0 when kallsyms does not
	// list it).
	Addr uint64
}

// FtraceRecords returns the functions ftrace can trace in the kernel's
// record order (ascending address, vmlinux before modules), one entry per
// traceable function: a name that several functions share is listed once
// for each of them that has an ftrace location (with no image or text
// table to tell, for each of them kallsyms has as text). Nil when the model has no
// ftrace function list.
func (m *Model) FtraceRecords() []FtraceRecord {
	m.ftraceRecOnce.Do(m.buildFtraceRecords)
	return m.ftraceRecs
}

func (m *Model) buildFtraceRecords() {
	var out []FtraceRecord
	seen := map[string]bool{}
	add := func(mod, name string) {
		key := mod + ":" + name
		if seen[key] {
			return
		}
		seen[key] = true
		n := 0
		syms := m.Symbols(mod, name)
		for _, s := range syms {
			// Of functions sharing a name, those ftrace has a
			// record for (known exactly with an image or its text
			// table).
			if s.IsText() && (len(syms) == 1 || m.hasFtraceLocation(s)) {
				out = append(out, FtraceRecord{Name: name, Module: mod, Addr: s.Addr})
				n++
			}
		}
		if n == 0 && mod == "" && m.ftrace.has(name) {
			// Listed by ftrace but not by kallsyms: keep the name.
			out = append(out, FtraceRecord{Name: name})
		}
	}
	for _, k := range m.ftrace.names {
		if mod, name, ok := strings.Cut(k, ":"); ok {
			add(mod, name)
			continue
		}
		if len(m.Symbols("", k)) == 0 && m.hasModuleEntry(k) {
			// A module's function: its "mod:func" entry adds it.
			continue
		}
		add("", k)
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if (a.Module == "") != (b.Module == "") {
			return a.Module == ""
		}
		return a.Addr < b.Addr
	})
	m.ftraceRecs = out
}

// hasModuleEntry reports whether the ftrace list has name as some
// module's function.
func (m *Model) hasModuleEntry(name string) bool {
	for _, s := range m.AllSymbols(name) {
		if s.Module != "" && m.ftrace.has(s.Module+":"+name) {
			return true
		}
	}
	return false
}
