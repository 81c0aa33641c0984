package kernel

import (
	"os"
	"path/filepath"
	"sort"
	"strconv"
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
	// Loc is its ftrace location, the call ftrace patches: after an
	// ENDBR64 where the function starts with one (known from the
	// running kernel's available_filter_functions_addrs, or an image or
	// its text table), else Addr.
	Loc uint64
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
	if m.ftraceDir != "" {
		if recs, err := m.hostFtraceRecords(); err == nil {
			m.ftraceRecs = recs
			return
		}
	}
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
	// Address order, vmlinux first; a record kallsyms does not know
	// (6.1's __ftrace_invalid_address___N) keeps its place in the list.
	var at []int
	for i, r := range out {
		if r.Addr != 0 {
			at = append(at, i)
		}
	}
	known := make([]FtraceRecord, len(at))
	for k, i := range at {
		known[k] = out[i]
	}
	sort.SliceStable(known, func(i, j int) bool {
		a, b := known[i], known[j]
		if (a.Module == "") != (b.Module == "") {
			return a.Module == ""
		}
		return a.Addr < b.Addr
	})
	for k, i := range at {
		out[i] = known[k]
	}
	endbr := m.endbrAt()
	for i := range out {
		out[i].Loc = out[i].Addr
		if endbr != nil && out[i].Module == "" && endbr(out[i].Addr) {
			out[i].Loc += endbrLen
		}
	}
	m.ftraceRecs = out
}

// endbrAt returns a test of whether a function starts with ENDBR64, from
// the kernel image or its text table; nil when the model has neither.
func (m *Model) endbrAt() func(uint64) bool {
	if m.imageOpen != nil {
		if img, err := m.loadImage(); err == nil {
			return func(addr uint64) bool {
				code, ok := img.bytesAt(addr)
				return ok && isEndbr(code)
			}
		}
		return nil
	}
	if t := m.loadTextTable(); t != nil {
		return t.endbr.has
	}
	return nil
}

// endbrLen is the length of ENDBR64.
const endbrLen = 4

// hostFtraceRecords reads the running kernel's available_filter_functions
// (or a snapshot directory's copy; and, where there is one,
// available_filter_functions_addrs): one record per line, as the kernel
// lists them. A name shared by several functions
// takes their kallsyms addresses in turn (the list is in address order).
func (m *Model) hostFtraceRecords() ([]FtraceRecord, error) {
	b, err := os.ReadFile(filepath.Join(m.ftraceDir, "available_filter_functions"))
	if err != nil {
		return nil, err
	}
	var locs []uint64
	if ab, err := os.ReadFile(filepath.Join(m.ftraceDir, "available_filter_functions_addrs")); err == nil {
		for _, line := range strings.Split(string(ab), "\n") {
			a, _, _ := strings.Cut(line, " ")
			if v, err := strconv.ParseUint(a, 16, 64); err == nil {
				locs = append(locs, v)
			}
		}
	}
	var endbr func(uint64) bool
	if len(locs) == 0 {
		endbr = m.endbrAt()
	}
	seen := map[string]int{}
	var out []FtraceRecord
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		name, mod, _ := strings.Cut(line, " ")
		mod = strings.Trim(strings.TrimSpace(mod), "[]")
		r := FtraceRecord{Name: name, Module: mod}
		k := seen[mod+":"+name]
		seen[mod+":"+name] = k + 1
		var text []Symbol
		for _, s := range m.Symbols(mod, name) {
			if s.IsText() {
				text = append(text, s)
			}
		}
		if k < len(text) {
			r.Addr = text[k].Addr
		}
		r.Loc = r.Addr
		if endbr != nil && mod == "" && r.Addr != 0 && endbr(r.Addr) {
			r.Loc += endbrLen
		}
		if len(out) < len(locs) {
			r.Loc = locs[len(out)]
			if s, ok := m.LookupAddr(r.Loc); ok && s.Name == name {
				r.Addr = s.Addr
			}
		}
		out = append(out, r)
	}
	return out, nil
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
