package kernel

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/cilium/ebpf/btf"
)

// Symbol is one /proc/kallsyms entry.
type Symbol struct {
	Name   string
	Module string // "" for vmlinux, else the [module] name from kallsyms
	Addr   uint64
	// Size is the distance to the next higher symbol address, the size
	// kallsyms_lookup_size_offset reports and "sym+0xoff/0xsize" prints.
	Size uint64
	Type byte // kallsyms type letter (t, T, d, D, ...)
}

// IsText reports whether the symbol lives in a text section (type t, T, w
// or W), i.e. can be a function.
func (s Symbol) IsText() bool {
	switch s.Type {
	case 't', 'T', 'w', 'W':
		return true
	}
	return false
}

// Model is an immutable description of one kernel. It is safe for
// concurrent use.
type Model struct {
	source  string // where the model came from, for error messages
	release string // uname -r
	version string // the whole /proc/version line
	major   int
	minor   int
	patch   int
	cpus    int
	arch    *Arch

	syms    symTable // kallsyms order
	byName  symIndex // name -> indices into syms
	addrIdx []int32  // vmlinux symbols (any type) sorted by address, first alias per address
	// addrKeys[i] is syms[addrIdx[i]].Addr: address lookups binary-search
	// this compact array instead of chasing indices into syms.
	addrKeys []uint64
	// modules holds the names of the loaded modules; a model loaded from
	// the symbol index fills it on first use (moduleSet).
	modules     map[string]bool
	modulesOnce sync.Once

	blacklist      []addrRange // sorted by start
	blacklistKnown bool
	blMerged       []addrRange // union of the blacklist ranges, sorted
	ftrace         hashSet
	config         map[string]string

	btfOnce sync.Once
	btfOpen func() ([]byte, error) // nil when the snapshot has no BTF
	btfSpec *btf.Spec
	btfErr  error

	protoCache    sync.Map // function name -> *funcProtoResult (FuncProto)
	protoCacheLen atomic.Int64

	boundsOnce sync.Once
	kb         kernelBounds

	modOnce sync.Once
	modIdx  []int32 // module symbols sorted by address

	ftraceListOnce sync.Once
	// ftraceRecs is FtraceRecords' list, built at first use.
	ftraceRecOnce sync.Once
	ftraceRecs    []FtraceRecord
	// ftraceDir is the running kernel's tracefs (host models) or the
	// snapshot's directory, whose available_filter_functions
	// FtraceRecords reads as it is.
	ftraceDir  string
	ftraceBare []string // bare names in the ftrace set, sorted
	ftraceMod  []string // "mod:func" entries, sorted

	// The text table stands in for the kernel image in snapshots that
	// ship without one (the embedded snapshot).
	tableOnce sync.Once
	tableOpen func() ([]byte, error)
	table     *textTable

	factsMu sync.Mutex
	facts   []Fact

	// live reads the running kernel's text (host models only): the
	// ground truth for ENDBR64 at function entries and instruction
	// boundaries when no image is at hand.
	liveOnce sync.Once
	// syscalls are the system call names (SyscallName).
	syscalls syscallTable
	liveOpen func() (TextReader, error)
	live     TextReader
	liveErr  error
	// liveSites are the patch-site tables read from the running kernel
	// (liveReservedSites).
	liveSitesOnce sync.Once
	liveSites     []reservedSite

	imageOnce sync.Once
	imageOpen func() ([]byte, error) // nil when the snapshot has no vmlinuz
	// noHashPointers: the running kernel was booted with
	// no_hash_pointers (hashptr.go).
	noHashPointers bool
	image          *textImage
	imageErr       error
}

type addrRange struct {
	start, end uint64
	name       string
}

// Release returns the kernel release as uname -r prints it, e.g.
// "6.12.95+deb12-cloud-amd64".
func (m *Model) Release() string { return m.release }

// VersionString returns the whole /proc/version line.
func (m *Model) VersionString() string { return m.version }

// KernelVersion returns the upstream version the kernel was built from,
// e.g. 6, 12, 95. Distribution kernels are recognised by their "Debian
// X.Y.Z-N" tag in /proc/version, whose ABI-numbered release (6.1.0-56) does
// not carry the real patch level; otherwise the release is parsed.
func (m *Model) KernelVersion() (major, minor, patch int) { return m.major, m.minor, m.patch }

// AtLeast reports whether the model's release is major.minor or newer.
func (m *Model) AtLeast(major, minor int) bool {
	return m.major > major || (m.major == major && m.minor >= minor)
}

// CPUs returns the number of possible CPUs; the default kretprobe
// maxactive depends on it.
func (m *Model) CPUs() int { return m.cpus }

// Arch returns the architecture's register tables.
func (m *Model) Arch() *Arch { return m.arch }

// Source describes where the model was loaded from ("embedded", "host" or
// a directory).
func (m *Model) Source() string { return m.source }

// Tracefs is where the running kernel's tracefs is mounted, for a host
// model that found one; "" otherwise.
func (m *Model) Tracefs() string {
	if m.source != "host" {
		return ""
	}
	return m.ftraceDir
}

// Symbols returns every kallsyms entry named name in module mod ("" means
// vmlinux only), in kallsyms order. More than one result is what makes the
// kernel reject a probe with NON_UNIQ_SYMBOL.
func (m *Model) Symbols(mod, name string) []Symbol {
	var out []Symbol
	for i := m.byName.first(&m.syms, name); i >= 0; i = m.byName.nextOf(i) {
		if m.syms.at(int(i)).Module == mod {
			out = append(out, m.syms.at(int(i)))
		}
	}
	return out
}

// AllSymbols returns every kallsyms entry named name, vmlinux and modules.
func (m *Model) AllSymbols(name string) []Symbol {
	out := []Symbol{}
	for i := m.byName.first(&m.syms, name); i >= 0; i = m.byName.nextOf(i) {
		out = append(out, m.syms.at(int(i)))
	}
	return out
}

// NumSymbols returns the number of kallsyms entries.
func (m *Model) NumSymbols() int { return m.syms.len() }

// ModuleLoaded reports whether kallsyms lists symbols of module mod.
func (m *Model) ModuleLoaded(mod string) bool { return m.moduleSet()[mod] }

// moduleSet returns the names of the modules kallsyms lists symbols of.
func (m *Model) moduleSet() map[string]bool {
	m.modulesOnce.Do(func() {
		if m.modules != nil {
			return
		}
		mods := map[string]bool{}
		last := ""
		for i := range m.syms.len() {
			if mod := m.syms.at(i).Module; mod != "" && mod != last {
				mods[mod] = true
				last = mod
			}
		}
		m.modules = mods
	})
	return m.modules
}

// FuncAt returns the text symbol containing addr: the vmlinux symbol with the
// highest address not above addr (the first of several aliases at that
// address, as kallsyms_lookup picks), provided it is a text symbol and addr
// lies within its size.
func (m *Model) FuncAt(addr uint64) (Symbol, bool) {
	i := m.addrUpper(addr)
	if i == 0 {
		return Symbol{}, false
	}
	s := m.syms.at(int(m.addrIdx[i-1]))
	if !s.IsText() || addr-s.Addr >= s.Size {
		return Symbol{}, false
	}
	return s, true
}

// addrUpper returns the number of vmlinux symbol addresses (first alias
// per address) not above addr: the index in addrIdx just past the
// candidate symbol for addr.
func (m *Model) addrUpper(addr uint64) int {
	i, found := slices.BinarySearch(m.addrKeys, addr)
	if found {
		i++ // addresses are unique in addrKeys
	}
	return i
}

// SymbolAt returns the vmlinux symbol of any type that covers addr, the way
// kallsyms_lookup resolves an address for "%pS".
func (m *Model) SymbolAt(addr uint64) (Symbol, bool) {
	i := m.addrUpper(addr)
	if i == 0 {
		return Symbol{}, false
	}
	s := m.syms.at(int(m.addrIdx[i-1]))
	if s.Size != 0 && addr-s.Addr >= s.Size {
		return Symbol{}, false
	}
	return s, true
}

// Blacklisted reports whether addr falls into a range of the kprobe
// blacklist (/sys/kernel/debug/kprobes/blacklist), where the kernel refuses
// to place kprobes.
func (m *Model) Blacklisted(addr uint64) bool {
	bl := m.blMerged
	i := sort.Search(len(bl), func(i int) bool { return bl[i].start > addr })
	return i > 0 && addr < bl[i-1].end
}

// BlacklistKnown reports whether the model has the kprobe blacklist (a
// host without debugfs mounted shows none).
func (m *Model) BlacklistKnown() bool { return m.blacklistKnown }

// BlacklistEntry returns the name of a blacklist entry holding addr.
func (m *Model) BlacklistEntry(addr uint64) (string, bool) {
	if !m.Blacklisted(addr) {
		return "", false
	}
	bl := m.blacklist
	i := sort.Search(len(bl), func(i int) bool { return bl[i].start > addr })
	// Entries may overlap (a function listed once per reason); the
	// covering one starts at or below addr.
	for j := i - 1; j >= 0; j-- {
		if addr < bl[j].end {
			return bl[j].name, true
		}
	}
	return "", false
}

// Ftraceable reports whether name is listed in available_filter_functions,
// i.e. ftrace (and so fprobe) can attach to it. name may be "mod:func" to
// ask for a module function specifically.
func (m *Model) Ftraceable(name string) bool {
	return m.ftrace.has(name)
}

// Config returns the value of a build option: "y", "m", the option's value
// (strings keep their quotes), or "" when the option is not set.
func (m *Model) Config(key string) string { return m.config[key] }

// String describes the model briefly.
func (m *Model) String() string {
	return fmt.Sprintf("kernel %s (%s, %d symbols, from %s)", m.release, m.arch.Name, m.syms.len(), m.source)
}

func (m *Model) errorf(format string, args ...any) error {
	return fmt.Errorf("kernel model %s: "+format, append([]any{m.source}, args...)...)
}

// parseRelease extracts "X.Y.Z" numbers from the beginning of s.
func parseRelease(s string) (major, minor, patch int, ok bool) {
	var nums [3]int
	n := 0
	cur, digits := 0, 0
	for i := 0; i <= len(s) && n < 3; i++ {
		if i < len(s) && s[i] >= '0' && s[i] <= '9' {
			cur = cur*10 + int(s[i]-'0')
			digits++
			continue
		}
		if digits == 0 {
			break
		}
		nums[n] = cur
		n++
		cur, digits = 0, 0
		if i >= len(s) || s[i] != '.' {
			break
		}
	}
	if n < 2 {
		return 0, 0, 0, false
	}
	return nums[0], nums[1], nums[2], true
}

// parseVersion reads a /proc/version line: the release after "Linux
// version " and, when present, the upstream version from the "Debian X.Y.Z"
// tag.
func parseVersion(line string) (release string, major, minor, patch int, err error) {
	line = strings.TrimSpace(line)
	const prefix = "Linux version "
	if !strings.HasPrefix(line, prefix) {
		return "", 0, 0, 0, fmt.Errorf("version %q does not start with %q", line, prefix)
	}
	rest := line[len(prefix):]
	if i := strings.IndexByte(rest, ' '); i >= 0 {
		release = rest[:i]
	} else {
		release = rest
	}
	var ok bool
	major, minor, patch, ok = parseRelease(release)
	if !ok {
		return "", 0, 0, 0, fmt.Errorf("release %q is not a kernel version", release)
	}
	// "... #1 SMP PREEMPT_DYNAMIC Debian 6.12.95-1~bpo12+1 (2026-07-05)":
	// the last "Debian " tag followed by a version whose major.minor match
	// the release is the package's upstream version. The compiler string
	// "(Debian 12.2.0-14...)" comes earlier and does not match.
	for s := line; ; {
		i := strings.LastIndex(s, "Debian ")
		if i < 0 {
			break
		}
		if ma, mi, pa, ok := parseRelease(s[i+len("Debian "):]); ok && ma == major && mi == minor {
			patch = pa
			break
		}
		s = s[:i]
	}
	return release, major, minor, patch, nil
}
