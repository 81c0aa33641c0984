package kernel

import (
	"encoding/binary"
	"path"
	"slices"
	"sort"
	"strings"
	"syscall"

	"github.com/ktrace-dev/ktrace/grammar"
)

// This file predicts what the kernel does when a kprobe or fprobe event is
// registered, from the symbol table, the blacklist, the ftrace function list
// and (when available) the kernel text. The rules below were read from
// kernel/kprobes.c, kernel/trace/trace_kprobe.c, trace_fprobe.c and
// arch/x86/kernel/kprobes/core.c and checked on the pinned 6.1.192 and
// 6.12.95 kernels (tools/vmsh, 2026-11-29); see probe_test.go for the
// observations.

// KprobeSite is where a kprobe lands, as _kprobe_addr() computes it.
type KprobeSite struct {
	// Addr is the probed address: the requested address, except that on
	// kernels with IBT a probe on the first byte of a function starting
	// with ENDBR64 is moved past it (+4). A raw-address probe reads back
	// with this adjusted address ("p 0xffffffff8143f690" shows
	// 0xffffffff8143f694 on 6.12); symbol probes read back as written.
	Addr uint64
	// Func is the symbol kallsyms_lookup_size_offset() finds for the
	// requested address (any type, first alias), Offset the distance from
	// its start to Addr.
	Func   Symbol
	Offset uint64
	// OnEntry is arch_adjust_kprobe_addr()'s on_func_entry: offset 0, or
	// with IBT and an ENDBR64 at the function start offset 0 or 4. Return
	// probes need it, and symbol probes with it get TPARG_FL_FENTRY.
	OnEntry bool
}

// LookupName returns the address of "sym" or "mod:sym" the way
// kallsyms_lookup_name() (and so kprobe_lookup_name() and the @SYM fetch
// argument) does: for "mod:sym" the first of that module's symbols; for a
// bare name the first vmlinux symbol, else the first module symbol
// (module_kallsyms_lookup_name), in kallsyms order. ":sym" names the
// module "", which no module is: nothing is found (a kprobe on it is left
// unarmed, as for a module that is not loaded).
func (m *Model) LookupName(sym string) (uint64, bool) {
	if sym == "" || sym[0] == ':' {
		return 0, false
	}
	mod, name := splitModSym(sym)
	firstMod := int32(-1)
	for i := m.byName.first(&m.syms, name); i >= 0; i = m.byName.nextOf(i) {
		switch s := m.syms.at(int(i)); {
		case s.Module == mod:
			return s.Addr, true
		case mod == "" && firstMod < 0:
			firstMod = i
		}
	}
	if firstMod >= 0 {
		return m.syms.at(int(firstMod)).Addr, true
	}
	return 0, false
}

// NumberOfSameSymbols counts the kallsyms entries a probe on "sym" or
// "mod:sym" could mean, as trace_kprobe's number_of_same_symbols() does:
// for a bare name every vmlinux and module symbol of that name (of any
// type), for "mod:sym" only that module's. The kernel rejects a symbol
// probe with NON_UNIQ_SYMBOL when this is above 1 and with BAD_PROBE_ADDR
// when it is 0 and the module (if any) is loaded; the errno differs by
// release (verified: 6.1 returns ENOENT for an unknown symbol and
// EADDRNOTAVAIL for a non-unique one, 6.12 EINVAL for both).
func (m *Model) NumberOfSameSymbols(sym string) int {
	mod, name := splitModSym(sym)
	n := 0
	for i := m.byName.first(&m.syms, name); i >= 0; i = m.byName.nextOf(i) {
		if mod == "" || m.syms.at(int(i)).Module == mod {
			n++
		}
	}
	return n
}

// splitModSym splits "mod:sym" at the first ':'.
func splitModSym(s string) (mod, name string) {
	if i := strings.IndexByte(s, ':'); i >= 0 {
		return s[:i], s[i+1:]
	}
	return "", s
}

// kernelBounds are the linker symbols the address checks need.
type kernelBounds struct {
	stext, etext, end uint64
	ok                bool
}

func (m *Model) bounds() kernelBounds {
	m.boundsOnce.Do(func() {
		get := func(name string) (uint64, bool) {
			s := m.Symbols("", name)
			if len(s) == 0 {
				return 0, false
			}
			return s[0].Addr, true
		}
		var ok1, ok2, ok3 bool
		m.kb.stext, ok1 = get("_stext")
		m.kb.etext, ok2 = get("_etext")
		m.kb.end, ok3 = get("_end")
		m.kb.ok = ok1 && ok2 && ok3
	})
	return m.kb
}

// LookupAddr is kallsyms_lookup(): the symbol the kernel prints for addr
// (%pS, sprint_symbol), found as lookupSizeOffset finds it. Addresses
// outside the kernel image and the modules have none, whatever absolute
// symbols (per-CPU offsets at 0, ...) lie below them, and print as hex.
func (m *Model) LookupAddr(addr uint64) (Symbol, bool) { return m.lookupSizeOffset(addr) }

// lookupSizeOffset finds the symbol covering addr like
// kallsyms_lookup_size_offset(): inside the kernel image ([_stext, _end]
// with CONFIG_KALLSYMS_ALL, else the text) the nearest symbol at or below
// addr, whatever its type; elsewhere a module symbol covering addr.
func (m *Model) lookupSizeOffset(addr uint64) (Symbol, bool) {
	b := m.bounds()
	inKernel := b.ok && addr >= b.stext && addr <= b.end
	if b.ok && m.config["CONFIG_KALLSYMS_ALL"] != "y" {
		inKernel = addr >= b.stext && addr < b.etext
	}
	if inKernel {
		if i := m.addrUpper(addr); i > 0 {
			return m.syms.at(int(m.addrIdx[i-1])), true
		}
		return Symbol{}, false
	}
	return m.moduleSymbolAt(addr)
}

// moduleSymbolAt finds the module symbol covering addr.
func (m *Model) moduleSymbolAt(addr uint64) (Symbol, bool) {
	if len(m.moduleSet()) == 0 {
		return Symbol{}, false
	}
	m.modOnce.Do(func() {
		for i := range m.syms.len() {
			s := m.syms.at(i)
			if s.Module != "" {
				m.modIdx = append(m.modIdx, int32(i))
			}
		}
		sort.SliceStable(m.modIdx, func(a, b int) bool { return m.syms.at(int(m.modIdx[a])).Addr < m.syms.at(int(m.modIdx[b])).Addr })
	})
	idx := m.modIdx
	i := sort.Search(len(idx), func(i int) bool { return m.syms.at(int(idx[i])).Addr > addr })
	if i == 0 {
		return Symbol{}, false
	}
	s := m.syms.at(int(idx[i-1]))
	if addr-s.Addr >= s.Size {
		return Symbol{}, false
	}
	return s, true
}

// ResolveKprobe computes where a kprobe on addr lands (_kprobe_addr() with
// arch_adjust_kprobe_addr()). errno is EINVAL for address 0 and ENOENT when
// no symbol covers addr; the kernel defers such an address probe (it is
// accepted and stays unplaced, for example "p 0x1234" reads back as
// "p:kprobes/p_0x0000000000001234 0x0000000000001234").
func (m *Model) ResolveKprobe(addr uint64) (KprobeSite, syscall.Errno) {
	if addr == 0 {
		return KprobeSite{}, syscall.EINVAL
	}
	fn, ok := m.lookupSizeOffset(addr)
	if !ok {
		return KprobeSite{}, syscall.ENOENT
	}
	off := addr - fn.Addr
	site := KprobeSite{Func: fn}
	if m.ibt() && m.startsWithEndbr(fn) {
		site.OnEntry = off == 0 || off == 4
		if site.OnEntry {
			off = 4
		}
	} else {
		site.OnEntry = off == 0
	}
	site.Offset = off
	site.Addr = fn.Addr + off
	return site, 0
}

// ResolveKprobeSymbol is ResolveKprobe for "sym+offset" ("mod:sym" allowed):
// ENOENT when the symbol is unknown.
func (m *Model) ResolveKprobeSymbol(sym string, offset uint64) (KprobeSite, syscall.Errno) {
	a, ok := m.LookupName(sym)
	if !ok {
		return KprobeSite{}, syscall.ENOENT
	}
	return m.ResolveKprobe(a + offset)
}

// KprobeOnFuncEntry is kprobe_on_func_entry(): 0 when the place is a
// function entry, EINVAL when it is not, ENOENT when it cannot be resolved.
// trace_kprobe uses it while parsing a symbol probe: EINVAL on a return
// probe is BAD_RETPROBE; 0 on an entry probe sets TPARG_FL_FENTRY (so
// "p vfs_read+4 $arg1" is an entry probe on 6.12, whose vfs_read starts
// with ENDBR64, but not on 6.1).
func (m *Model) KprobeOnFuncEntry(sym string, offset uint64) syscall.Errno {
	site, errno := m.ResolveKprobeSymbol(sym, offset)
	if errno != 0 {
		return errno
	}
	if !site.OnEntry {
		return syscall.EINVAL
	}
	return 0
}

// CheckProbeAddress predicts the registration of a kprobe (isReturn false)
// or kretprobe (isReturn true) on addr, the address the event's place
// resolves to (symbol address + offset, or the raw address), and returns
// the error_log code and errno trace_kprobe reports. ErrNone with errno 0
// means the kernel accepts the probe.
//
// The kernel's order, each step only reached when the previous passed:
//
//  1. Notrace functions (within_notrace_func, CONFIG_KPROBE_EVENTS_ON_NOTRACE
//     unset): when a symbol covers addr and its function has no ftrace
//     location, the probe is refused with EINVAL. A suffixed symbol
//     ("foo.cold", "foo.isra.0") is judged by its base "foo" instead. This
//     refuses data symbols ("p jiffies", "r jiffies"), linker symbols
//     ("p _text", "p _stext"), freed init code ("p start_kernel"),
//     noinstr/notrace code ("p native_sched_clock",
//     "p preempt_schedule_notrace", "p __fentry__"), the IBT padding
//     ("p __pfx_vfs_read" on 6.12) and functions missing from
//     available_filter_functions in general ("p INET_ECN_set_ce").
//     Code FAIL_REG_PROBE, errno EINVAL.
//  2. Return probes (register_kretprobe): kprobe_on_func_entry must hold;
//     else EINVAL, FAIL_REG_PROBE ("r 0xffffffff8143f691"); ENOENT when
//     no symbol covers addr.
//  3. _kprobe_addr: address 0 is EINVAL (FAIL_REG_PROBE); an address no
//     symbol covers is ENOENT (BAD_PROBE_ADDR). trace_kprobe accepts
//     ENOENT without placing the probe when the event has no symbol
//     (raw-address probes, even "r 0x1234") or names a module that is not
//     loaded, so callers must turn ENOENT into success for those.
//  4. check_kprobe_address_safe: the address must be kernel text
//     ([_stext, _etext)) or module text, not in the kprobe blacklist
//     (also via the base name of a suffixed symbol), and not on a patch
//     site: any byte of a jump-label site (2- or 5-byte jump/NOP, from
//     __jump_table), of a static call (5-byte call, from
//     static_call_sites), or the ud2 of a BUG()/WARN() (from
//     __bug_table); else EINVAL, FAIL_REG_PROBE ("p do_int3",
//     "p kprobe_int3_handler", "p do_one_initcall+79" on 6.1, a jump
//     label). The site tables need the kernel image or the text table.
//  5. can_probe: the address must be an instruction boundary (see
//     InsnBoundary); else EILSEQ, BAD_INSN_BNDRY ("p vfs_read+1",
//     "p vfs_read+100000"). From v6.9 an exception instruction there
//     (int3, INT n, INTO, INT1, UD0/1/2) is refused the same way
//     ("p perf_get_hw_event_config+45", an int3 after a return jump, on
//     6.12).
//  6. Copying the instruction: before v6.9 an int3 fails with EINVAL,
//     FAIL_REG_PROBE (the same place on 6.1, +46 there).
//
// Steps 5 and 6 look at the running kernel's text, which differs from the
// image inside return-thunk jumps: see returnSites.
//
// Steps 4 (patch sites) to 6 are skipped when the model has neither a
// kernel image nor a text table; the probe is then taken as accepted.
//
// All codes are reported at argv[1] offset 0. Seen on both pinned kernels
// with identical results, except where the ENDBR64 of 6.12 makes offset 4
// a function entry and for int3 (step 5 vs 6).
//
// __register_trace_kprobe runs step 1, then resolves @SYM fetch arguments
// (an unknown one fails with ENOENT), then steps 2-6; callers that model
// the argument step use WithinNotraceFunc and CheckRegisterKprobe
// separately.
func (m *Model) CheckProbeAddress(addr uint64, isReturn bool) (code grammar.Code, errnoFromRegistration syscall.Errno) {
	if m.WithinNotraceFunc(addr) {
		return grammar.ErrFailRegProbe, syscall.EINVAL
	}
	return m.CheckRegisterKprobe(addr, isReturn)
}

// CheckRegisterKprobe is steps 2-6 of CheckProbeAddress: what
// register_kretprobe()/register_kprobe() return for addr once the notrace
// check has passed.
func (m *Model) CheckRegisterKprobe(addr uint64, isReturn bool) (grammar.Code, syscall.Errno) {
	site, errno := m.ResolveKprobe(addr)
	if errno == 0 && isReturn && !site.OnEntry {
		errno = syscall.EINVAL
	}
	switch errno {
	case 0:
	case syscall.ENOENT:
		return grammar.ErrBadProbeAddr, syscall.ENOENT
	default:
		return grammar.ErrFailRegProbe, errno
	}
	if !m.isKernelText(site.Addr, site.Func) || m.withinKprobeBlacklist(site.Addr) || m.reservedKind(site.Addr) != 0 {
		return grammar.ErrFailRegProbe, syscall.EINVAL
	}
	ok, checked := m.InsnBoundary(site.Addr)
	int3, exception := m.exceptionAt(site.Addr)
	if m.runtimeInt3(site.Addr) {
		ok, checked, int3, exception = true, true, true, true
	}
	if !checked {
		return grammar.ErrNone, 0
	}
	if !ok {
		return grammar.ErrBadInsnBndry, syscall.EILSEQ
	}
	if m.refusesExceptionInsns() {
		if exception {
			return grammar.ErrBadInsnBndry, syscall.EILSEQ
		}
	} else if int3 {
		return grammar.ErrFailRegProbe, syscall.EINVAL
	}
	return grammar.ErrNone, 0
}

// refusesExceptionInsns reports whether can_probe() refuses INT3, INT n,
// INTO, INT1 and UD0/1/2 as probe points (upstream v6.9, "x86/kprobes:
// Prohibit kprobing on INT and UD"); before that an int3 fails later, when
// the instruction is copied, with EINVAL.
func (m *Model) refusesExceptionInsns() bool {
	return m.major > 6 || (m.major == 6 && m.minor >= 9)
}

// WithinNotraceFunc is trace_kprobe's within_notrace_func(), step 1 of
// CheckProbeAddress: whether the function covering addr has no ftrace
// location (judging "foo.suffix" by "foo"), so that the kernel refuses a
// kprobe there with EINVAL and FAIL_REG_PROBE. Addresses no symbol covers
// are not refused here.
func (m *Model) WithinNotraceFunc(addr uint64) bool {
	fn, ok := m.notraceFunc(addr)
	if !ok {
		return false
	}
	if base, _, hasSuffix := strings.Cut(fn.Name, "."); hasSuffix {
		sym := base
		if fn.Module != "" {
			sym = fn.Module + ":" + base
		}
		if a, ok := m.LookupName(sym); ok {
			_, notrace := m.notraceFunc(a)
			return notrace
		}
	}
	return true
}

// notraceFunc reports whether the function covering addr has no ftrace
// location (__within_notrace_func()), returning that function.
func (m *Model) notraceFunc(addr uint64) (Symbol, bool) {
	if addr == 0 {
		return Symbol{}, false
	}
	fn, ok := m.lookupSizeOffset(addr)
	if !ok {
		return Symbol{}, false
	}
	return fn, !m.hasFtraceLocation(fn)
}

// hasFtraceLocation reports whether ftrace has a call site in fn
// (ftrace_location_range over the function). With a kernel image (or the
// text table computed from one) this is exact: the function calls
// __fentry__ at its entry (after ENDBR64) and lies in .text, since init
// code's records are dropped after boot; on both pinned kernels that agrees
// with available_filter_functions for every uniquely named function.
// Without an image the name is looked up in available_filter_functions,
// where a name shared by several functions counts as traced for all of
// them.
func (m *Model) hasFtraceLocation(fn Symbol) bool {
	if fn.Module == "" {
		if m.imageOpen != nil {
			if img, err := m.loadImage(); err == nil {
				return m.imageFtraceSite(img, fn)
			}
		} else if t := m.loadTextTable(); t != nil {
			return t.ftrace.has(fn.Addr)
		}
		return m.Ftraceable(fn.Name)
	}
	return m.Ftraceable(fn.Module + ":" + fn.Name)
}

// imageFtraceSite reports whether fn, in .text, starts (after ENDBR64)
// with the 5-byte call to __fentry__ that ftrace patches.
func (m *Model) imageFtraceSite(img *textImage, fn Symbol) bool {
	if img.sectionOf(fn.Addr) != ".text" {
		return false
	}
	code, ok := img.bytesAt(fn.Addr)
	if !ok {
		return false
	}
	site := fn.Addr
	if isEndbr(code) {
		code, site = code[4:], site+4
	}
	if len(code) < 5 || code[0] != 0xe8 {
		return false
	}
	fentry, ok := m.LookupName("__fentry__")
	if !ok {
		return false
	}
	rel := int64(int32(binary.LittleEndian.Uint32(code[1:5])))
	return site+5+uint64(rel) == fentry
}

// withinKprobeBlacklist is within_kprobe_blacklist(): the blacklist ranges,
// and for "foo.suffix" also foo's.
func (m *Model) withinKprobeBlacklist(addr uint64) bool {
	if m.Blacklisted(addr) {
		return true
	}
	fn, ok := m.lookupSizeOffset(addr)
	if !ok {
		return false
	}
	base, _, hasSuffix := strings.Cut(fn.Name, ".")
	if !hasSuffix {
		return false
	}
	if fn.Module != "" {
		base = fn.Module + ":" + base
	}
	if a, ok := m.LookupName(base); ok {
		return m.Blacklisted(a)
	}
	return false
}

// isKernelText is core_kernel_text() after boot (init text is freed) or a
// module text symbol.
func (m *Model) isKernelText(addr uint64, fn Symbol) bool {
	if fn.Module != "" {
		return fn.IsText()
	}
	b := m.bounds()
	return b.ok && addr >= b.stext && addr < b.etext
}

// ibt reports whether kprobes skip ENDBR64 at function entries
// (CONFIG_X86_KERNEL_IBT).
func (m *Model) ibt() bool { return m.config["CONFIG_X86_KERNEL_IBT"] == "y" }

// startsWithEndbr reports whether fn begins with ENDBR64 (or its sealed
// form), which is_endbr() recognises: from the kernel image when the model
// has one, else from the snapshot's text table (the embedded snapshot),
// else from the running kernel's text (host models), else assumed for
// every function ftrace can trace (right for about 83% of them on 6.12).
func (m *Model) startsWithEndbr(fn Symbol) bool {
	// Init code is freed after boot and its pages poisoned with INT3:
	// the kernel reads no ENDBR there, so "r INIT_FUNC+4" is no function
	// entry (seen on 6.12: "r bpf_kfunc_init+4" is BAD_RETPROBE).
	if lo, hi, ok := m.tableRange("__init_begin", "__init_end"); ok && fn.Addr >= lo && fn.Addr < hi {
		return false
	}
	if m.imageOpen != nil {
		if img, err := m.loadImage(); err == nil {
			if code, ok := img.bytesAt(fn.Addr); ok {
				return isEndbr(code)
			}
			return false
		}
	}
	if t := m.loadTextTable(); t != nil {
		return t.endbr.has(fn.Addr)
	}
	if code, ok := m.liveBytes(fn.Addr, 4); ok {
		return isEndbr(code)
	}
	return fn.IsText() && m.hasFtraceLocation(fn)
}

// isEndbr matches what is_endbr() accepts: ENDBR64, ENDBR32 and the
// 4-byte NOP that IBT sealing writes at boot over the ENDBRs of functions
// never called indirectly. 6.12 seals with "osp nopl (%rax)" (66 0f 1f 00;
// its arch_adjust_kprobe_addr compares against 0x001f0f66), later kernels
// with "nopl -42(%rax)" (0f 1f 40 d6). Because a sealed ENDBR still counts,
// sealing moves no probe: "p FUNC" stays at FUNC+4 and "r FUNC+4" stays a
// function entry. The model reads the on-disk image, which is never
// sealed; no function in either pinned image starts with either NOP, so
// accepting both is exact for them.
func isEndbr(code []byte) bool {
	if len(code) < 4 {
		return false
	}
	switch {
	case code[0] == 0x66 && code[1] == 0x0f && code[2] == 0x1f && code[3] == 0x00:
		return true
	case code[0] == 0x0f && code[1] == 0x1f && code[2] == 0x40 && code[3] == 0xd6:
		return true
	}
	return code[0] == 0xf3 && code[1] == 0x0f && code[2] == 0x1e && (code[3] == 0xfa || code[3] == 0xfb)
}

// CheckFprobe predicts the registration of an fprobe ("f" event) on
// function, which may be "mod:func" or a glob ("vfs_rea*"): ftrace must
// have at least one matching function (ftrace_set_filter), else the kernel
// reports FAIL_REG_PROBE with EINVAL at argv[1] — for unknown names,
// notrace functions, data symbols and unloaded modules alike. Verified on
// 6.12: "f vfs_read", "f vfs_rea*", "f active_show" (a duplicated name
// with a traced instance) and "f do_int3" (kprobe-blacklisted but
// ftrace-able) are accepted; "f nosuchsym", "f jiffies",
// "f native_sched_clock", "f start_kernel", "f ext4:ext4_sync_fs" (module
// not loaded) fail.
func (m *Model) CheckFprobe(function string) (grammar.Code, syscall.Errno) {
	if m.FtraceMatch(function) {
		return grammar.ErrNone, 0
	}
	return grammar.ErrFailRegProbe, syscall.EINVAL
}

// FtraceMatch reports whether a function name or ftrace glob ('*', '?',
// '[...]'), optionally prefixed by "mod:", matches an entry of
// available_filter_functions.
//
// Globs are matched against sorted name lists built once per model; only
// the entries sharing the glob's literal prefix (the text before its first
// metacharacter) are tried, so "vfs_rea*" looks at a handful of names
// rather than every traceable function.
func (m *Model) FtraceMatch(pattern string) bool {
	if !strings.ContainsAny(pattern, "*?[") {
		return m.Ftraceable(pattern)
	}
	mod, glob := splitModSym(pattern)
	m.ftraceListOnce.Do(m.buildFtraceLists)
	list, prefix := m.ftraceBare, glob[:globLiteralLen(glob)]
	if mod != "" {
		// Module entries are "mod:func"; a module part is compared
		// literally, so it can narrow the range as a whole.
		list, prefix = m.ftraceMod, mod+":"+prefix
	}
	lo, _ := slices.BinarySearch(list, prefix)
	for _, name := range list[lo:] {
		if !strings.HasPrefix(name, prefix) {
			break
		}
		nmod, nname := splitModSym(name)
		if nmod != mod {
			continue
		}
		if ok, err := path.Match(glob, nname); err == nil && ok {
			return true
		}
	}
	return false
}

// buildFtraceLists splits the ftrace set into the sorted lists FtraceMatch
// searches: bare function names and "mod:func" entries.
func (m *Model) buildFtraceLists() {
	for _, k := range m.ftrace.names {
		if strings.IndexByte(k, ':') >= 0 {
			m.ftraceMod = append(m.ftraceMod, k)
		} else {
			m.ftraceBare = append(m.ftraceBare, k)
		}
	}
	slices.Sort(m.ftraceBare)
	slices.Sort(m.ftraceMod)
}

// globLiteralLen returns the length of the leading part of a path.Match
// pattern that can only match itself: up to the first '*', '?', '[' or
// escaping backslash.
func globLiteralLen(glob string) int {
	if i := strings.IndexAny(glob, "*?[\\"); i >= 0 {
		return i
	}
	return len(glob)
}
