package kernel

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unsafe"
)

// Snapshot file names, as in a snapshot directory (see Capture).
const (
	FileKallsyms  = "kallsyms"
	FileBTF       = "btf"
	FileBlacklist = "kprobes_blacklist"
	FileFilter    = "available_filter_functions"
	FileConfig    = "config"
	FileVersion   = "version"
	FileCPUs      = "cpus"
	FileImage     = "vmlinuz"
)

// snapshotSource hands the loader the contents of the snapshot files. Open
// returns fs.ErrNotExist (wrapped) for a missing file.
type snapshotSource struct {
	name string
	// where names the place a member is read from, for the model's facts
	// ("" for the member's own name in the snapshot).
	where func(file string) string
	read  func(file string) ([]byte, error)
	// has reports whether an optional file exists without reading it.
	has func(file string) bool
}

// LoadSnapshot builds a model from a snapshot directory holding the files
// kallsyms, kprobes_blacklist, available_filter_functions, config, version
// and cpus, and optionally btf and vmlinuz (both read lazily, on first use).
func LoadSnapshot(dir string) (*Model, error) {
	src := snapshotSource{
		name: dir,
		read: func(file string) ([]byte, error) { return os.ReadFile(filepath.Join(dir, file)) },
		has: func(file string) bool {
			st, err := os.Stat(filepath.Join(dir, file))
			return err == nil && st.Mode().IsRegular()
		},
	}
	m, err := load(src)
	if err != nil {
		return nil, err
	}
	m.addTextFact()
	return m, nil
}

// origin names where the source reads file from.
func (s snapshotSource) origin(file string) string {
	if s.where != nil {
		if w := s.where(file); w != "" {
			return w
		}
	}
	return s.name + ": " + file
}

func load(src snapshotSource) (*Model, error) {
	m := &Model{source: src.name}
	required := func(file string) ([]byte, error) {
		b, err := src.read(file)
		if err != nil {
			return nil, fmt.Errorf("kernel model %s: reading %s: %w", src.name, file, err)
		}
		return b, nil
	}

	b, err := required(FileVersion)
	if err != nil {
		return nil, err
	}
	m.version = strings.TrimSpace(string(b))
	if m.release, m.major, m.minor, m.patch, err = parseVersion(m.version); err != nil {
		return nil, m.errorf("%s: %w", FileVersion, err)
	}
	m.addFact("release", m.release, src.origin(FileVersion))

	if b, err = required(FileCPUs); err != nil {
		return nil, err
	}
	if m.cpus, err = strconv.Atoi(strings.TrimSpace(string(b))); err != nil || m.cpus < 1 {
		return nil, m.errorf("%s: invalid CPU count %q", FileCPUs, strings.TrimSpace(string(b)))
	}
	m.addFact("possible CPUs", strconv.Itoa(m.cpus), src.origin(FileCPUs))

	if b, err = required(FileKallsyms); err != nil {
		return nil, err
	}
	if err = m.parseKallsyms(b); err != nil {
		return nil, m.errorf("%s: %w", FileKallsyms, err)
	}
	m.addFact("symbols", strconv.Itoa(len(m.syms)), src.origin(FileKallsyms))

	// The build configuration is extra evidence: a running kernel often
	// has none to show (no /proc/config.gz, no /boot in a container), and
	// the few options ktrace needs show in the symbol table as well.
	if src.has(FileConfig) {
		if b, err = required(FileConfig); err != nil {
			return nil, err
		}
		m.config = parseConfig(b)
		m.addFact("config", "yes", src.origin(FileConfig))
	} else {
		m.config = map[string]string{}
		m.addFact("config", "no", "none found ("+src.origin(FileConfig)+"); options derived from kallsyms")
	}
	m.deriveConfig()

	if m.arch, err = archFor(m.config); err != nil {
		return nil, m.errorf("%w", err)
	}

	// The blacklist and the ftrace function list live in debugfs and
	// tracefs, which a host may not have mounted; without them the model
	// cannot predict those refusals, and says so in its facts.
	if src.has(FileBlacklist) {
		if b, err = required(FileBlacklist); err != nil {
			return nil, err
		}
		if m.blacklist, err = parseBlacklist(b); err != nil {
			return nil, m.errorf("%s: %w", FileBlacklist, err)
		}
		m.blMerged = mergeRanges(m.blacklist)
		m.blacklistKnown = true
		m.addFact("kprobe blacklist", strconv.Itoa(len(m.blacklist))+" ranges", src.origin(FileBlacklist))
	} else {
		m.addFact("kprobe blacklist", "unknown", "not readable ("+src.origin(FileBlacklist)+"): blacklisted places are refused only when a probe is attached")
	}

	if src.has(FileFilter) {
		if b, err = required(FileFilter); err != nil {
			return nil, err
		}
		m.ftrace = parseFilterFunctions(b)
		m.addFact("ftrace functions", strconv.Itoa(len(m.ftrace)), src.origin(FileFilter))
	} else {
		m.ftrace = map[string]struct{}{}
		m.addFact("ftrace functions", "unknown", "not readable ("+src.origin(FileFilter)+")")
	}

	if src.has(FileBTF) {
		m.btfOpen = func() ([]byte, error) { return src.read(FileBTF) }
	}
	if src.has(FileTextTable) {
		m.tableOpen = func() ([]byte, error) { return src.read(FileTextTable) }
	}
	if src.has(FileImage) {
		m.imageOpen = func() ([]byte, error) { return src.read(FileImage) }
	}
	if src.has(FileBTF) {
		m.addFact("btf", "yes", src.origin(FileBTF))
	} else {
		m.addFact("btf", "no", src.origin(FileBTF))
	}
	return m, nil
}

// parseConfig reads a kernel .config: "CONFIG_X=value" lines; comments
// (including "# CONFIG_X is not set") are skipped, so unset options read
// back as "".
func parseConfig(b []byte) map[string]string {
	cfg := make(map[string]string, 4096)
	for len(b) > 0 {
		var line []byte
		line, b = nextLine(b)
		line = bytes.TrimSpace(line)
		if len(line) == 0 || line[0] == '#' {
			continue
		}
		k, v, ok := bytes.Cut(line, []byte{'='})
		if !ok {
			continue
		}
		cfg[string(k)] = string(v)
	}
	return cfg
}

func nextLine(b []byte) (line, rest []byte) {
	if i := bytes.IndexByte(b, '\n'); i >= 0 {
		return b[:i], b[i+1:]
	}
	return b, nil
}

// parseKallsyms reads /proc/kallsyms ("ADDR TYPE NAME" plus "\t[MODULE]"
// for module symbols) and builds the name index and the address index.
//
// Sizes follow kallsyms_lookup_size_offset: the size of a vmlinux symbol is
// the distance from its address to the next higher address of any vmlinux
// symbol (aliases at the same address share it); module symbols are sized
// the same way within their module. The last symbol of each group gets 0.
func (m *Model) parseKallsyms(b []byte) error {
	// One string holds all the text so that names are substrings of it
	// rather than 150k separate allocations. It is b itself, not a copy:
	// the model takes b over, and its loaders hand it a buffer nothing
	// else keeps (a fresh read, or a decompressed snapshot member).
	all := unsafe.String(unsafe.SliceData(b), len(b))
	n := strings.Count(all, "\n") + 1
	m.syms = make([]Symbol, 0, n)
	m.modules = make(map[string]bool)
	lineNo := 0
	lastMod := ""
	for rest := all; len(rest) > 0; {
		lineNo++
		var line string
		if i := strings.IndexByte(rest, '\n'); i >= 0 {
			line, rest = rest[:i], rest[i+1:]
		} else {
			line, rest = rest, ""
		}
		if line == "" {
			continue
		}
		sp := strings.IndexByte(line, ' ')
		if sp <= 0 || len(line) < sp+4 || line[sp+2] != ' ' {
			return fmt.Errorf("line %d: malformed entry %q", lineNo, line)
		}
		addr, ok := parseHex64(line[:sp])
		if !ok {
			return fmt.Errorf("line %d: bad address %q", lineNo, line[:sp])
		}
		typ := line[sp+1]
		name := line[sp+3:]
		mod := ""
		if t := strings.IndexByte(name, '\t'); t >= 0 {
			mod = strings.TrimSpace(name[t+1:])
			name = name[:t]
			if len(mod) < 2 || mod[0] != '[' || mod[len(mod)-1] != ']' {
				return fmt.Errorf("line %d: malformed module %q", lineNo, mod)
			}
			mod = mod[1 : len(mod)-1]
			if mod != lastMod {
				m.modules[mod] = true
				lastMod = mod
			}
		}
		if name == "" {
			return fmt.Errorf("line %d: empty symbol name", lineNo)
		}
		m.syms = append(m.syms, Symbol{Name: name, Module: mod, Addr: addr, Type: typ})
	}
	if len(m.syms) == 0 {
		return errors.New("no symbols")
	}
	m.byName.build(m.syms)
	m.sizeSymbols()
	return nil
}

// parseHex64 is strconv.ParseUint(s, 16, 64) without the error value:
// kallsyms addresses are read by the hundred thousand.
func parseHex64(s string) (uint64, bool) {
	if s == "" {
		return 0, false
	}
	var v uint64
	for i := 0; i < len(s); i++ {
		c := s[i]
		var d byte
		switch {
		case c >= '0' && c <= '9':
			d = c - '0'
		case c >= 'a' && c <= 'f':
			d = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			d = c - 'A' + 10
		default:
			return 0, false
		}
		if v>>60 != 0 {
			return 0, false // overflow
		}
		v = v<<4 | uint64(d)
	}
	return v, true
}

// sizeSymbols assigns sizes and builds the vmlinux address index.
func (m *Model) sizeSymbols() {
	// Group by module; vmlinux is "". Kallsyms lists each module's
	// symbols together, so the group is found once per run of lines.
	groups := make(map[string][]int32)
	vmlinux := make([]int32, 0, len(m.syms))
	for i := range m.syms {
		mod := m.syms[i].Module
		if mod == "" {
			vmlinux = append(vmlinux, int32(i))
			continue
		}
		groups[mod] = append(groups[mod], int32(i))
	}
	groups[""] = vmlinux
	byAddr := func(a, b int32) int { return cmp.Compare(m.syms[a].Addr, m.syms[b].Addr) }
	for mod, g := range groups {
		// The vmlinux part of kallsyms is already in address order.
		if !slices.IsSortedFunc(g, byAddr) {
			slices.SortStableFunc(g, byAddr)
		}
		// Walk runs of equal addresses; each run's size is the gap to the next run.
		for i := 0; i < len(g); {
			j := i
			for j < len(g) && m.syms[g[j]].Addr == m.syms[g[i]].Addr {
				j++
			}
			var size uint64
			if j < len(g) {
				size = m.syms[g[j]].Addr - m.syms[g[i]].Addr
			}
			for k := i; k < j; k++ {
				m.syms[g[k]].Size = size
			}
			i = j
		}
		if mod == "" {
			// Keep the first alias per address for address lookups.
			text := make([]int32, 0, len(g))
			for i, s := range g {
				if i > 0 && m.syms[s].Addr == m.syms[g[i-1]].Addr {
					continue
				}
				text = append(text, s)
			}
			m.addrIdx = text
			m.addrKeys = make([]uint64, len(text))
			for i, s := range text {
				m.addrKeys[i] = m.syms[s].Addr
			}
		}
	}
}

// parseBlacklist reads "0xSTART-0xEND\tsymbol" lines.
func parseBlacklist(b []byte) ([]addrRange, error) {
	var out []addrRange
	lineNo := 0
	for len(b) > 0 {
		var line []byte
		line, b = nextLine(b)
		lineNo++
		s := strings.TrimSpace(string(line))
		if s == "" {
			continue
		}
		rng, name, _ := strings.Cut(s, "\t")
		lo, hi, ok := strings.Cut(rng, "-")
		if !ok {
			return nil, fmt.Errorf("line %d: malformed range %q", lineNo, s)
		}
		start, err1 := strconv.ParseUint(strings.TrimPrefix(lo, "0x"), 16, 64)
		end, err2 := strconv.ParseUint(strings.TrimPrefix(hi, "0x"), 16, 64)
		if err1 != nil || err2 != nil || end < start {
			return nil, fmt.Errorf("line %d: malformed range %q", lineNo, s)
		}
		out = append(out, addrRange{start: start, end: end, name: strings.TrimSpace(name)})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].start < out[j].start })
	return out, nil
}

// parseFilterFunctions reads available_filter_functions: one function per
// line, module functions followed by " [module]". Both "func" and
// "module:func" are indexed for module functions.
func parseFilterFunctions(b []byte) map[string]struct{} {
	// As for kallsyms, names are substrings of the text, which the model
	// owns from here on.
	all := unsafe.String(unsafe.SliceData(b), len(b))
	set := make(map[string]struct{}, strings.Count(all, "\n")+1)
	for len(all) > 0 {
		var line string
		if i := strings.IndexByte(all, '\n'); i >= 0 {
			line, all = all[:i], all[i+1:]
		} else {
			line, all = all, ""
		}
		s := strings.TrimSpace(line)
		if s == "" {
			continue
		}
		name, mod, ok := strings.Cut(s, " ")
		set[name] = struct{}{}
		if ok {
			mod = strings.Trim(strings.TrimSpace(mod), "[]")
			if mod != "" {
				set[mod+":"+name] = struct{}{}
			}
		}
	}
	return set
}

// mergeRanges returns the union of ranges sorted by start.
func mergeRanges(rs []addrRange) []addrRange {
	var out []addrRange
	for _, r := range rs {
		if n := len(out); n > 0 && r.start <= out[n-1].end {
			if r.end > out[n-1].end {
				out[n-1].end = r.end
			}
			continue
		}
		out = append(out, addrRange{start: r.start, end: r.end})
	}
	return out
}
