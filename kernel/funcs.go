package kernel

import (
	"fmt"
	"path"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"

	"github.com/ktrace-dev/ktrace/grammar"
)

// FuncInfo says how one function of the model can be probed: by a kprobe
// ("p FUNC" / "r FUNC" in kprobe_events) and by an fprobe ("f FUNC" in
// dynamic_events, through ftrace), and, for each that the kernel refuses,
// why.
type FuncInfo struct {
	Name   string // kallsyms name
	Module string // "" for vmlinux
	// Count is how many kallsyms entries have this name (in vmlinux and
	// every module for a vmlinux name, in the module for a module one):
	// above 1 a symbol kprobe is NON_UNIQ_SYMBOL.
	Count int
	// Addr is the address "p FUNC" resolves to (the first entry in kallsyms
	// order); 0 when the name is not in kallsyms.
	Addr uint64
	// Type is the kallsyms type letter of the first entry (0 when unknown).
	Type byte

	Kprobe bool
	// KprobeCode and KprobeErrno are what the kernel reports for "p FUNC"
	// when it refuses it; KprobeWhy says why in words.
	KprobeCode  grammar.Code
	KprobeErrno syscall.Errno
	KprobeWhy   string

	Fprobe bool
	// FprobeWhy says why "f FUNC" is refused (FAIL_REG_PROBE).
	FprobeWhy string
	// FtraceUnknown: the model has no ftrace function list (a host whose
	// tracefs could not be read), so Fprobe is unknown.
	FtraceUnknown bool
}

// Spec returns how a probe line names the function: "FUNC" or "MOD:FUNC".
func (f *FuncInfo) Spec() string {
	if f.Module != "" {
		return f.Module + ":" + f.Name
	}
	return f.Name
}

// pfxPrefix starts the names of the padding symbols before functions.
const pfxPrefix = "__pfx_"

// funcPattern is one glob of Funcs.
type funcPattern struct {
	mod, name string
	hasMod    bool
	prefix    string // the name glob's literal start
	literal   bool
	matched   bool
}

// Funcs returns the model's functions whose name matches one of globs
// (ftrace glob syntax: '*', '?', '[...]'; "MOD:GLOB" for module
// functions, whose module part is a glob too), sorted by module then
// name, each once. No globs means every function. The "__pfx_" padding
// symbols are left out unless a glob's literal start asks for them. A
// glob without metacharacters that names no function still gets an entry
// saying why it cannot be probed (no such symbol, not a function, module
// not loaded).
func (m *Model) Funcs(globs []string) ([]FuncInfo, error) {
	pats := make([]*funcPattern, 0, len(globs))
	for _, g := range globs {
		p := &funcPattern{}
		if i := strings.IndexByte(g, ':'); i >= 0 {
			p.mod, p.name, p.hasMod = g[:i], g[i+1:], true
		} else {
			p.name = g
		}
		for _, s := range []string{p.mod, p.name} {
			if _, err := path.Match(s, ""); err != nil {
				return nil, fmt.Errorf("funcs: bad glob %q: %w", g, err)
			}
		}
		p.literal = !strings.ContainsAny(g, "*?[\\")
		p.prefix = p.name[:globLiteralLen(p.name)]
		pats = append(pats, p)
	}
	// Each distinct name has one chain in the name index, holding
	// every kallsyms entry of that name. A (module, name) pair with a text
	// entry is one function; the chain also gives number_of_same_symbols.
	var idx []int32 // the function's first text entry
	var cnt []int32 // number_of_same_symbols for its spec
	// The "__pfx_" symbols are the padding before each function on
	// kernels with CONFIG_CALL_PADDING (6.12: about 48,000), not
	// functions; kprobes refuse them (no ftrace location). They are
	// listed only for a glob whose literal start asks for them.
	pfx := false
	for _, p := range pats {
		pfx = pfx || strings.HasPrefix(p.prefix, pfxPrefix) || (p.prefix != "" && strings.HasPrefix(pfxPrefix, p.prefix))
	}
	// The first entry of each name heads its chain; walking the table in
	// kallsyms order keeps the names' memory in order.
	isHead := make([]bool, m.syms.len())
	for _, slot := range m.byName.slots {
		if slot != 0 {
			isHead[slot-1] = true
		}
	}
	for h := range m.syms.len() {
		if !isHead[h] {
			continue
		}
		head := int32(h)
		name := m.syms.at(int(head)).Name
		if !pfx && strings.HasPrefix(name, pfxPrefix) {
			continue
		}
		if len(pats) > 0 {
			hit := false
			for _, p := range pats {
				if !strings.HasPrefix(name, p.prefix) {
					continue
				}
				if ok, _ := path.Match(p.name, name); ok {
					hit = true
					break
				}
			}
			if !hit {
				continue
			}
		}
		total := 0
		for i := head; i >= 0; i = m.byName.nextOf(i) {
			total++
		}
		for i := head; i >= 0; i = m.byName.nextOf(i) {
			s := m.syms.at(int(i))
			if !s.IsText() {
				continue
			}
			// Only the module's first text entry stands for the pair.
			dup := false
			for j := head; j != i; j = m.byName.nextOf(j) {
				if m.syms.at(int(j)).Module == s.Module && m.syms.at(int(j)).IsText() {
					dup = true
					break
				}
			}
			if dup {
				continue
			}
			if len(pats) > 0 && !m.funcMatches(pats, &s) {
				continue
			}
			n := total
			if s.Module != "" {
				n = 0
				for j := head; j >= 0; j = m.byName.nextOf(j) {
					if m.syms.at(int(j)).Module == s.Module {
						n++
					}
				}
			}
			idx = append(idx, i)
			cnt = append(cnt, int32(n))
		}
	}
	order := make([]int32, len(idx))
	for i := range order {
		order[i] = int32(i)
	}
	m.sortByName(order, idx)
	out := make([]FuncInfo, len(idx))
	m.parallel(len(idx), func(lo, hi int) {
		for k := lo; k < hi; k++ {
			i := order[k]
			out[k] = m.funcInfoAt(idx[i], int(cnt[i]))
		}
	})
	// Literal names that matched no function: say why.
	var extra []FuncInfo
	for _, p := range pats {
		if !p.literal || p.matched {
			continue
		}
		dup := false
		for _, e := range extra {
			dup = dup || (e.Module == p.mod && e.Name == p.name)
		}
		if !dup {
			extra = append(extra, m.funcInfo(p.mod, p.name))
		}
	}
	if len(extra) > 0 {
		out = append(out, extra...)
		slices.SortStableFunc(out, func(a, b FuncInfo) int {
			if c := strings.Compare(a.Module, b.Module); c != 0 {
				return c
			}
			return strings.Compare(a.Name, b.Name)
		})
	}
	return out, nil
}

// sortByName sorts idx, indices into sym (symbol indices), by module,
// then name. The module's rank and the name's first sixteen bytes are
// compared as integers first, so most comparisons touch no string.
func (m *Model) sortByName(idx []int32, sym []int32) {
	type item struct {
		k1, k2 uint64
		mod    int32
		i      int32
	}
	rank := map[string]int32{}
	var mods []string
	for _, i := range idx {
		if mod := m.syms.at(int(sym[i])).Module; mod != "" {
			if _, ok := rank[mod]; !ok {
				rank[mod] = 0
				mods = append(mods, mod)
			}
		}
	}
	slices.Sort(mods)
	for r, mod := range mods {
		rank[mod] = int32(r + 1)
	}
	items := make([]item, len(idx))
	for k, i := range idx {
		s := m.syms.at(int(sym[i]))
		var key [2]uint64
		for b := 0; b < 16; b++ {
			var c uint64
			if b < len(s.Name) {
				c = uint64(s.Name[b])
			}
			key[b/8] = key[b/8]<<8 | c
		}
		it := item{k1: key[0], k2: key[1], i: i}
		if s.Module != "" {
			it.mod = rank[s.Module]
		}
		items[k] = it
	}
	slices.SortFunc(items, func(a, b item) int {
		switch {
		case a.mod != b.mod:
			return int(a.mod - b.mod)
		case a.k1 != b.k1:
			if a.k1 < b.k1 {
				return -1
			}
			return 1
		case a.k2 != b.k2:
			if a.k2 < b.k2 {
				return -1
			}
			return 1
		}
		return strings.Compare(m.syms.at(int(sym[a.i])).Name, m.syms.at(int(sym[b.i])).Name)
	})
	for k := range items {
		idx[k] = items[k].i
	}
}

// parallel runs fn over [0, n) in chunks on every CPU.
func (m *Model) parallel(n int, fn func(lo, hi int)) {
	workers := runtime.GOMAXPROCS(0)
	if n < 2048 || workers < 2 {
		fn(0, n)
		return
	}
	var wg sync.WaitGroup
	chunk := (n + workers - 1) / workers
	for lo := 0; lo < n; lo += chunk {
		hi := min(lo+chunk, n)
		wg.Add(1)
		go func() {
			defer wg.Done()
			fn(lo, hi)
		}()
	}
	wg.Wait()
}

// funcMatches reports whether text symbol s matches one of the globs,
// marking the globs it matches.
func (m *Model) funcMatches(pats []*funcPattern, s *Symbol) bool {
	hit := false
	for _, p := range pats {
		if p.hasMod {
			if s.Module == "" {
				continue
			}
			if ok, _ := path.Match(p.mod, s.Module); !ok {
				continue
			}
		}
		if !strings.HasPrefix(s.Name, p.prefix) {
			continue
		}
		if ok, _ := path.Match(p.name, s.Name); ok {
			p.matched = true
			hit = true
		}
	}
	return hit
}

// FuncInfo describes one function, named "FUNC" or "MOD:FUNC".
func (m *Model) FuncInfo(spec string) FuncInfo {
	mod, name := splitModSym(spec)
	return m.funcInfo(mod, name)
}

// funcInfo predicts "p SPEC" and "f SPEC" for one name, in the kernel's
// order: trace_kprobe's symbol checks (number_of_same_symbols), then
// __register_trace_kprobe (within_notrace_func, then register_kprobe's
// address checks, see CheckProbeAddress); for the fprobe,
// ftrace_set_filter on the name (see CheckFprobe).
func (m *Model) funcInfo(mod, name string) FuncInfo {
	f := FuncInfo{Name: name, Module: mod}
	spec := f.Spec()
	// number_of_same_symbols: a bare name counts in vmlinux and every
	// module, "mod:name" in that module.
	var first []Symbol
	for i := m.byName.first(&m.syms, name); i >= 0; i = m.byName.nextOf(i) {
		s := m.syms.at(int(i))
		if mod == "" || s.Module == mod {
			f.Count++
		}
		if s.Module == mod && first == nil {
			first = []Symbol{m.syms.at(int(i))}
			f.Addr, f.Type = s.Addr, s.Type
		}
	}
	m.funcFprobe(&f, spec)
	switch {
	case mod != "" && !m.ModuleLoaded(mod):
		f.KprobeWhy = fmt.Sprintf("module %s is not loaded (the kernel accepts the probe and arms it when the module loads)", mod)
		f.FprobeWhy = fmt.Sprintf("module %s is not loaded", mod)
		return f
	case len(first) == 0:
		f.KprobeCode, f.KprobeErrno = grammar.ErrBadProbeAddr, syscall.EINVAL
		f.KprobeWhy = "no such symbol in kallsyms"
		return f
	case f.Count > 1:
		f.KprobeCode, f.KprobeErrno = grammar.ErrNonUniqSymbol, syscall.EINVAL
		f.KprobeWhy = fmt.Sprintf("not unique: %d kallsyms entries named %s (probe one by address)", f.Count, name)
		return f
	}
	m.kprobeVerdict(&f, first[0])
	return f
}

// funcInfoAt is funcInfo for the text symbol at index i, the first of its
// (module, name) in kallsyms order, named by count entries.
func (m *Model) funcInfoAt(i int32, count int) FuncInfo {
	sym := m.syms.at(int(i))
	f := FuncInfo{Name: sym.Name, Module: sym.Module, Count: count, Addr: sym.Addr, Type: sym.Type}
	m.funcFprobe(&f, f.Spec())
	if count > 1 {
		f.KprobeCode, f.KprobeErrno = grammar.ErrNonUniqSymbol, syscall.EINVAL
		f.KprobeWhy = fmt.Sprintf("not unique: %d kallsyms entries named %s (probe one by address)", count, sym.Name)
		return f
	}
	m.kprobeVerdict(&f, sym)
	return f
}

// kprobeVerdict fills in the kprobe verdict for the unique symbol sym.
func (m *Model) kprobeVerdict(f *FuncInfo, sym Symbol) {
	if !sym.IsText() {
		f.KprobeCode, f.KprobeErrno = grammar.ErrFailRegProbe, syscall.EINVAL
		f.KprobeWhy = fmt.Sprintf("not a function (kallsyms type %c)", sym.Type)
		return
	}
	if m.WithinNotraceFunc(sym.Addr) {
		f.KprobeCode, f.KprobeErrno = grammar.ErrFailRegProbe, syscall.EINVAL
		f.KprobeWhy = "notrace: the function has no ftrace location (notrace, noinstr or freed init code)"
		return
	}
	code, errno := m.CheckRegisterKprobe(sym.Addr, false)
	if code == grammar.ErrNone {
		f.Kprobe = true
		return
	}
	f.KprobeCode, f.KprobeErrno = code, errno
	f.KprobeWhy = m.kprobeRefusal(sym, code)
}

// funcFprobe fills in the fprobe verdict.
func (m *Model) funcFprobe(f *FuncInfo, spec string) {
	if m.ftrace.len() == 0 {
		f.FtraceUnknown = true
		f.FprobeWhy = "unknown: the model has no ftrace function list (available_filter_functions)"
		return
	}
	if m.Ftraceable(spec) {
		f.Fprobe = true
		return
	}
	f.FprobeWhy = "not traceable by ftrace: not in available_filter_functions"
}

// KprobeRefusal says in words why register_kprobe refuses a probe at the
// entry of fn with code, the verdict of CheckRegisterKprobe.
func (m *Model) kprobeRefusal(fn Symbol, code grammar.Code) string {
	site, errno := m.ResolveKprobe(fn.Addr)
	if errno != 0 {
		return "the address does not resolve to a symbol"
	}
	switch {
	case !m.isKernelText(site.Addr, site.Func):
		return "not kernel text (init code freed after boot, or not code)"
	case m.withinKprobeBlacklist(site.Addr):
		if e, ok := m.BlacklistEntry(site.Addr); ok {
			return "blacklisted: in the kprobe blacklist (" + e + ")"
		}
		return "blacklisted: in the kprobe blacklist (through its base function)"
	case m.reservedKind(site.Addr) != 0:
		return "the probe address is a patch site (" + m.reservedKind(site.Addr).String() + ")"
	case code == grammar.ErrBadInsnBndry:
		return "the probe address is not an instruction boundary"
	}
	return "refused by register_kprobe (" + code.Name() + ")"
}

// KprobeRefusal says why the kernel refuses a kprobe at addr with
// FAIL_REG_PROBE: notrace, blacklisted, not kernel text or a patch site.
// It returns "" when the model sees no reason.
func (m *Model) KprobeRefusal(addr uint64) string {
	fn, ok := m.lookupSizeOffset(addr)
	if !ok {
		return ""
	}
	if m.WithinNotraceFunc(addr) {
		return fn.Name + " is notrace: it has no ftrace location (notrace, noinstr or freed init code), so kprobe events refuse it"
	}
	site, errno := m.ResolveKprobe(addr)
	if errno != 0 {
		return ""
	}
	switch {
	case !m.isKernelText(site.Addr, site.Func):
		return fn.Name + " is not kernel text (init code freed after boot, or not code)"
	case m.withinKprobeBlacklist(site.Addr):
		if e, ok := m.BlacklistEntry(site.Addr); ok {
			return fn.Name + " is blacklisted: /sys/kernel/debug/kprobes/blacklist lists " + e
		}
		return fn.Name + " is blacklisted through its base function"
	case m.reservedKind(site.Addr) != 0:
		return fmt.Sprintf("%s+%d is a patch site (%s) where kprobes are refused", fn.Name, site.Addr-fn.Addr, m.reservedKind(site.Addr))
	}
	return ""
}

// FuncNamesWithPrefix returns up to limit distinct function names (text
// symbols; "MOD:NAME" for module ones when prefix has "MOD:") starting
// with prefix, sorted, for shell completion.
func (m *Model) FuncNamesWithPrefix(prefix string, limit int) []string {
	mod, bare := splitModSym(prefix)
	seen := map[string]bool{}
	var out []string
	for i := range m.syms.len() {
		s := m.syms.at(int(i))
		if !s.IsText() || s.Module != mod || !strings.HasPrefix(s.Name, bare) || seen[s.Name] {
			continue
		}
		seen[s.Name] = true
		n := s.Name
		if mod != "" {
			n = mod + ":" + n
		}
		out = append(out, n)
	}
	slices.Sort(out)
	if len(out) > limit {
		out = out[:limit]
	}
	return out
}
