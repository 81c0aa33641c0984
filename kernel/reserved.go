package kernel

import (
	"debug/elf"
	"encoding/binary"
	"sort"
)

// siteKind says why the kernel refuses a kprobe on a text address that is
// otherwise a valid probe point.
type siteKind uint8

const (
	siteJumpLabel  siteKind = iota + 1 // jump_label_text_reserved
	siteStaticCall                     // static_call_text_reserved
	siteBug                            // find_bug: a BUG()/WARN() ud2
)

func (k siteKind) String() string {
	switch k {
	case siteJumpLabel:
		return "jump label"
	case siteStaticCall:
		return "static call"
	case siteBug:
		return "BUG/WARN"
	}
	return "none"
}

// reservedSite is a byte range of kernel text the kernel refuses kprobes in.
type reservedSite struct {
	addr uint64
	size uint8
	kind siteKind
}

// tableRange locates a table of the image between two kallsyms symbols.
func (m *Model) tableRange(start, stop string) (lo, hi uint64, ok bool) {
	a, ok1 := m.LookupName(start)
	b, ok2 := m.LookupName(stop)
	return a, b, ok1 && ok2 && b >= a
}

// reservedSites reads the patch-site tables of the vmlinux ELF f (addresses
// already shifted by delta): __jump_table (struct jump_entry: s32 code,
// s32 target, long key; the site is the 2- or 5-byte jump at code),
// static_call_sites (s32 addr, s32 key; a 5-byte call), __bug_table
// (s32 bug_addr_disp first; 12 bytes per entry with
// CONFIG_DEBUG_BUGVERBOSE, else 8). Sites in init text are dropped: the
// kernel ignores them after boot. (LOCK prefixes listed in .smp_locks are
// not refused: the pinned kernels accepted "p vdso_fault+107", a LOCK
// instruction, on one CPU.)
func (m *Model) reservedSites(f *elf.File, img *textImage) []reservedSite {
	data := func(lo, hi uint64) []byte {
		for _, s := range f.Sections {
			if s.Type != elf.SHT_PROGBITS || s.Flags&elf.SHF_ALLOC == 0 {
				continue
			}
			a := s.Addr + img.delta
			if lo >= a && hi <= a+s.Size {
				b, err := s.Data()
				if err != nil || uint64(len(b)) < hi-a {
					return nil
				}
				return b[lo-a : hi-a]
			}
		}
		return nil
	}
	inText := func(addr uint64) bool { return img.sectionOf(addr) == ".text" }
	var out []reservedSite
	add := func(addr uint64, size uint8, kind siteKind) {
		if inText(addr) {
			out = append(out, reservedSite{addr, size, kind})
		}
	}
	rel := func(base uint64, b []byte) uint64 {
		return base + uint64(int64(int32(binary.LittleEndian.Uint32(b))))
	}
	if lo, hi, ok := m.tableRange("__start___jump_table", "__stop___jump_table"); ok {
		b := data(lo, hi)
		for o := 0; o+16 <= len(b); o += 16 {
			code := rel(lo+uint64(o), b[o:])
			size := uint8(5)
			if c, ok := img.bytesAt(code); ok {
				if n := insnLen(c); n == 2 {
					size = 2
				}
			}
			add(code, size, siteJumpLabel)
		}
	}
	if lo, hi, ok := m.tableRange("__start_static_call_sites", "__stop_static_call_sites"); ok {
		b := data(lo, hi)
		for o := 0; o+8 <= len(b); o += 8 {
			add(rel(lo+uint64(o), b[o:]), 5, siteStaticCall)
		}
	}
	if lo, hi, ok := m.tableRange("__start___bug_table", "__stop___bug_table"); ok {
		entry := 8
		if m.config["CONFIG_DEBUG_BUGVERBOSE"] == "y" {
			entry = 12
		}
		b := data(lo, hi)
		for o := 0; o+entry <= len(b); o += entry {
			add(rel(lo+uint64(o), b[o:]), 1, siteBug)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].addr < out[j].addr })
	return out
}

// reservedAt returns the kind of reserved site covering addr.
func reservedAt(sites []reservedSite, addr uint64) siteKind {
	i := sort.Search(len(sites), func(i int) bool { return sites[i].addr > addr })
	// Sites do not nest beyond a few bytes; look back over the closest.
	for j := i - 1; j >= 0 && j >= i-4; j-- {
		if addr < sites[j].addr+uint64(sites[j].size) {
			return sites[j].kind
		}
	}
	return 0
}

// exceptionInsn classifies the instruction at the start of code the way
// x86 kprobes do: int3 (0xcc), and the other exception-raising
// instructions INT n, INTO, INT1, UD0, UD1 and UD2.
func exceptionInsn(code []byte) (int3, exception bool) {
	if len(code) == 0 {
		return false, false
	}
	switch code[0] {
	case 0xcc:
		return true, true
	case 0xcd, 0xce, 0xf1:
		return false, true
	case 0x0f:
		if len(code) > 1 && (code[1] == 0x0b || code[1] == 0xb9 || code[1] == 0xff) {
			return false, true
		}
	}
	return false, false
}

// reservedKind returns why the kernel refuses a kprobe at addr because of
// a patch site (0 when it does not), from the image or the text table.
func (m *Model) reservedKind(addr uint64) siteKind {
	if m.imageOpen != nil {
		if img, err := m.loadImage(); err == nil {
			return reservedAt(img.reserved, addr)
		}
		return 0
	}
	if t := m.loadTextTable(); t != nil {
		return reservedAt(t.reserved, addr)
	}
	sites := m.liveReservedSites()
	k := reservedAt(sites, addr)
	if k == siteJumpLabel {
		// A jump label's site is a 5-byte jump or NOP, or a 2-byte
		// jump: read which when addr is past the first two bytes.
		i := sort.Search(len(sites), func(i int) bool { return sites[i].addr > addr })
		for j := i - 1; j >= 0 && j >= i-4; j-- {
			if s := sites[j]; s.kind == siteJumpLabel && addr >= s.addr+2 && addr < s.addr+5 {
				if c, ok := m.liveBytes(s.addr, 16); ok && insnLen(c) == 2 {
					return 0
				}
			}
		}
	}
	return k
}

// liveReservedSites reads the patch-site tables (see reservedSites) from
// the running kernel's memory, for a model of it without an image: the
// tables lie between their kallsyms bounds in the kernel's data, which
// the live text reader reads as well. Only sites in core kernel text
// (_stext to _etext) count, as init text is gone after boot. Without the
// kernel's configuration the size of a __bug_table entry (12 bytes with
// CONFIG_DEBUG_BUGVERBOSE, else 8) is the one whose first entries point at
// UD2 instructions.
func (m *Model) liveReservedSites() []reservedSite {
	m.liveSitesOnce.Do(func() {
		r := m.liveText()
		b := m.bounds()
		if r == nil || !b.ok {
			return
		}
		read := func(lo, hi uint64) []byte {
			if hi-lo > 16<<20 {
				return nil
			}
			p := make([]byte, hi-lo)
			if r.ReadKernel(p, lo) != nil {
				return nil
			}
			return p
		}
		inText := func(a uint64) bool { return a >= b.stext && a < b.etext }
		rel := func(base uint64, p []byte) uint64 {
			return base + uint64(int64(int32(binary.LittleEndian.Uint32(p))))
		}
		var out []reservedSite
		add := func(addr uint64, size uint8, kind siteKind) {
			if inText(addr) {
				out = append(out, reservedSite{addr, size, kind})
			}
		}
		if lo, hi, ok := m.tableRange("__start___jump_table", "__stop___jump_table"); ok {
			p := read(lo, hi)
			for o := 0; o+16 <= len(p); o += 16 {
				// Taken as 5 bytes; reservedKind reads a 2-byte
				// jump's length when it matters.
				add(rel(lo+uint64(o), p[o:]), 5, siteJumpLabel)
			}
		}
		if lo, hi, ok := m.tableRange("__start_static_call_sites", "__stop_static_call_sites"); ok {
			p := read(lo, hi)
			for o := 0; o+8 <= len(p); o += 8 {
				add(rel(lo+uint64(o), p[o:]), 5, siteStaticCall)
			}
		}
		if lo, hi, ok := m.tableRange("__start___bug_table", "__stop___bug_table"); ok {
			p := read(lo, hi)
			entry := m.bugEntrySize(p, lo)
			for o := 0; entry > 0 && o+entry <= len(p); o += entry {
				add(rel(lo+uint64(o), p[o:]), 1, siteBug)
			}
		}
		sort.Slice(out, func(i, j int) bool { return out[i].addr < out[j].addr })
		m.liveSites = out
	})
	return m.liveSites
}

// bugEntrySize is the size of a __bug_table entry (at lo, entries p): by
// the configuration, else the size whose first entries all point at a
// UD2 (0f 0b) in the running text; 0 when neither fits.
func (m *Model) bugEntrySize(p []byte, lo uint64) int {
	switch m.config["CONFIG_DEBUG_BUGVERBOSE"] {
	case "y":
		return 12
	case "n":
		return 8
	}
	for _, entry := range []int{12, 8} {
		n, ok := 0, true
		for o := 0; ok && n < 8 && o+entry <= len(p); o, n = o+entry, n+1 {
			a := lo + uint64(o) + uint64(int64(int32(binary.LittleEndian.Uint32(p[o:]))))
			c, read := m.liveBytes(a, 2)
			ok = read && c[0] == 0x0f && c[1] == 0x0b
		}
		if ok && n > 0 {
			return entry
		}
	}
	return 0
}

// exceptionAt classifies the instruction starting at addr (see
// exceptionInsn), from the image or the text table.
func (m *Model) exceptionAt(addr uint64) (int3, exception bool) {
	if m.imageOpen != nil {
		if img, err := m.loadImage(); err == nil {
			code, _ := img.bytesAt(addr)
			return exceptionInsn(code)
		}
		return false, false
	}
	if t := m.loadTextTable(); t != nil {
		if t.int3.has(addr) {
			return true, true
		}
		return false, t.exception.has(addr)
	}
	if code, ok := m.liveBytes(addr, 16); ok {
		return exceptionInsn(code)
	}
	return false, false
}

// returnSites lists the return-thunk jumps of the image (.return_sites:
// s32 offsets to "jmp __x86_return_thunk", 5 bytes). When the CPU needs no
// return thunk the kernel rewrites each of them at boot into "ret" and four
// int3 bytes, so on the running kernel the bytes after the jump's first
// one are int3 instructions. That is what the pinned kernels do under
// qemu's "-cpu max": on 6.1 "p dax_flush+32", two bytes into such a jump,
// fails with EINVAL (an int3 that cannot be copied) where the image alone
// would say EILSEQ.
func returnSites(f *elf.File, img *textImage) []uint64 {
	var out []uint64
	for _, s := range f.Sections {
		if s.Name != ".return_sites" {
			continue
		}
		b, err := s.Data()
		if err != nil {
			return nil
		}
		base := s.Addr + img.delta
		for o := 0; o+4 <= len(b); o += 4 {
			a := base + uint64(o) + uint64(int64(int32(binary.LittleEndian.Uint32(b[o:]))))
			if img.sectionOf(a) != ".text" {
				continue
			}
			if code, ok := img.bytesAt(a); ok && len(code) >= 5 && code[0] == 0xe9 {
				out = append(out, a)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// insideReturnSite reports whether addr is one of the four bytes after the
// first of a return-thunk jump, an int3 on the running kernel.
func insideReturnSite(sites []uint64, addr uint64) bool {
	i := sort.Search(len(sites), func(i int) bool { return sites[i] >= addr })
	return i > 0 && addr-sites[i-1] < 5
}

// runtimeInt3 reports whether addr is an int3 created at boot inside a
// return-thunk jump (see returnSites), from the image or the text table.
func (m *Model) runtimeInt3(addr uint64) bool {
	if m.imageOpen != nil {
		if img, err := m.loadImage(); err == nil {
			return insideReturnSite(img.retSites, addr)
		}
		return false
	}
	if t := m.loadTextTable(); t != nil {
		return insideReturnSite(t.retSites, addr)
	}
	return false
}
