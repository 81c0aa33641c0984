package kernel

import (
	"golang.org/x/arch/x86/x86asm"
)

// InsnBoundary reports whether addr is an instruction boundary of the
// kernel text, the test x86 can_probe() applies before placing a kprobe
// (a failure makes registration return -EILSEQ, BAD_INSN_BNDRY): starting
// at the symbol kallsyms finds for addr (kallsyms_lookup_size_offset, the
// first alias), instructions are decoded one after another until addr is
// reached or passed.
//
// The instructions come from the vmlinux inside the snapshot's vmlinuz,
// decoded on first use, or, for snapshots without an image (the embedded
// one), from the instruction-start table computed from it at generation
// time (see TextTable). The running kernel's text differs from the image
// only at boot-patched sites (ftrace call sites, alternatives, retpoline and
// return-thunk sites, jump labels, static calls); these keep their total
// length, so boundaries after them are the same, but an offset strictly
// inside such a site may be judged differently than the running kernel
// would (for instance the bytes after a "ret" that replaced a 5-byte
// return-thunk jump).
//
// A host model without an image decodes the running kernel's text instead
// (liveBoundary).
//
// checked is false when the model has no kernel text at all, addr
// is not in an executable section or is not covered by a kallsyms symbol, or the
// decoder cannot decode an instruction on the way (the kernel's decoder
// knows a few instructions golang.org/x/arch does not); callers should then
// accept the address, as ktrace cannot disprove it.
func (m *Model) InsnBoundary(addr uint64) (ok, checked bool) {
	if m.imageOpen == nil {
		if t := m.loadTextTable(); t != nil {
			if sym, found := m.SymbolAt(addr); found {
				return t.boundary(sym, addr)
			}
			return false, false
		}
		return m.liveBoundary(addr)
	}
	img, err := m.loadImage()
	if err != nil {
		return false, false
	}
	sym, found := m.SymbolAt(addr)
	if !found {
		return false, false
	}
	code, inText := img.bytesAt(sym.Addr)
	if !inText {
		return false, false
	}
	pc := sym.Addr
	for pc < addr {
		n := insnLen(code[pc-sym.Addr:])
		if n <= 0 {
			return false, false
		}
		pc += uint64(n)
		if pc-sym.Addr > uint64(len(code)) {
			return false, false
		}
	}
	return pc == addr, true
}

// insnLen decodes one x86-64 instruction and returns its length, or 0 when
// it cannot be decoded.
func insnLen(code []byte) int {
	if len(code) == 0 {
		return 0
	}
	// ENDBR64 is handled explicitly so a decoder gap there cannot hide a
	// whole function (its sealed forms are plain NOPs the decoder knows).
	if len(code) >= 4 && code[0] == 0xf3 && code[1] == 0x0f && code[2] == 0x1e && code[3] == 0xfa {
		return 4
	}
	inst, err := x86asm.Decode(code, 64)
	if err != nil {
		return 0
	}
	return inst.Len
}

// maxLiveDecode bounds how much running text liveBoundary reads to reach
// an offset: kprobes on offsets farther into a function than this are
// not checked.
const maxLiveDecode = 64 << 10

// liveBoundary is InsnBoundary on the running kernel's text. The live
// text holds the int3 of every armed kprobe that is not ftrace based
// (the kernel decodes the saved original instruction there); an int3 met
// before addr makes the answer unknown rather than wrong.
func (m *Model) liveBoundary(addr uint64) (ok, checked bool) {
	if m.liveText() == nil {
		return false, false
	}
	sym, found := m.SymbolAt(addr)
	if !found || !sym.IsText() {
		return false, false
	}
	off := addr - sym.Addr
	if off == 0 {
		return true, true
	}
	if off >= maxLiveDecode {
		return false, false
	}
	code, read := m.liveBytes(sym.Addr, int(off)+16)
	if !read {
		return false, false
	}
	pc := uint64(0)
	for pc < off {
		if code[pc] == 0xcc {
			return false, false
		}
		n := insnLen(code[pc:])
		if n <= 0 {
			return false, false
		}
		pc += uint64(n)
	}
	return pc == off, true
}
