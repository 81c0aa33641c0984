package grammar

import "syscall"

// KretprobeMaxactiveMax is KRETPROBE_MAXACTIVE_MAX (and the fprobe rethook
// limit): the largest accepted maxactive.
const KretprobeMaxactiveMax = 4096

// Head is argv[0] of a create line, split the way the kernel looks at it:
// the probe letter, the text between the letter and the first ':' (a
// maxactive number when it starts with a digit, otherwise silently ignored),
// and the event spec after the first ':'.
type Head struct {
	Letter  byte   // argv[0][0]: 'p', 'r', 'f', 't', ...
	Prefix  string // argv[0][1:] up to the first ':' (or the end)
	HasSpec bool   // argv[0] contains ':' after the letter
	Spec    string // text after the first ':' ("" for "p:")
	SpecOff int    // byte offset of Spec inside argv[0]
}

// ParseHead splits argv[0]. It never fails: every check is the caller's,
// in the kernel's order.
func ParseHead(argv0 string) Head {
	h := Head{}
	if len(argv0) == 0 {
		return h
	}
	h.Letter = argv0[0]
	rest := argv0[1:]
	for i := 0; i < len(rest); i++ {
		if rest[i] == ':' {
			h.Prefix = rest[:i]
			h.HasSpec = true
			h.Spec = rest[i+1:]
			h.SpecOff = i + 2
			return h
		}
	}
	h.Prefix = rest
	return h
}

// HasMaxactive reports whether the prefix starts with a digit, which is
// what makes the kernel parse it as a maxactive number.
func (h *Head) HasMaxactive() bool {
	return len(h.Prefix) > 0 && isDigit(h.Prefix[0])
}

// ParseMaxactive parses the maxactive prefix like the kprobe and fprobe
// front ends do: at most 63 characters, kstrtouint base 0, not zero, at most
// KretprobeMaxactiveMax. Errors point at argv[0] offset 1.
//
// The kernel parses into an int: a value of 2^31 or more wraps to a
// negative number, which passes the signed "too big" test. The result
// keeps that wrap ("r4294967295 vfs_read" is maxactive -1, which
// register_kretprobe turns into the default; checked on 6.1 and 6.12).
func (h *Head) ParseMaxactive() (int, *Error) {
	if len(h.Prefix) > MaxEventNameLen-1 {
		return 0, &Error{Code: ErrBadMaxact, Arg: 0, Off: 1, Errno: syscall.EINVAL}
	}
	v, err := ParseUint32(h.Prefix, 0)
	if err != nil || v == 0 {
		return 0, &Error{Code: ErrBadMaxact, Arg: 0, Off: 1, Errno: syscall.EINVAL}
	}
	n := int(int32(v))
	if n > KretprobeMaxactiveMax {
		return 0, &Error{Code: ErrMaxactTooBig, Arg: 0, Off: 1, Errno: syscall.EINVAL}
	}
	return n, nil
}

// KprobePlace is argv[1] of a kprobe line: either an address or
// [MOD:]SYM[+|-OFFS][%return].
type KprobePlace struct {
	IsAddr bool
	Addr   uint64 // address probes
	Symbol string // the symbol text as the kernel keeps it: "MOD:SYM" or "SYM", no offset, no suffix
	Module string // text before the first ':' of Symbol, if any
	Func   string // Symbol after the first ':'
	HasMod bool   // Symbol contains ':'
	Offset int64  // 0..UINT_MAX
	Return bool   // "%return" suffix
}

// ParseKprobePlace parses argv[1] of a p/r line in the order of
// trace_kprobe's create function: an address if kstrtoul(base 0) accepts it;
// otherwise a symbol, where a token with both '/' and ':' is a uprobe
// (notMine), a '%' must start exactly "%return" (BAD_ADDR_SUFFIX at the '%'),
// and the first '+' or '-' starts a kstrtol offset that must be within
// 0..UINT_MAX (BAD_PROBE_ADDR at offset 0). Errors are attributed to argv[1].
func ParseKprobePlace(arg string) (p KprobePlace, err *Error, notMine bool) {
	if v, e := ParseUint64(arg, 0); e == nil {
		return KprobePlace{IsAddr: true, Addr: v}, nil, false
	}
	if indexByte(arg, '/') >= 0 && indexByte(arg, ':') >= 0 {
		return p, nil, true
	}
	sym := arg
	if i := indexByte(sym, '%'); i >= 0 {
		if sym[i:] != "%return" {
			return p, &Error{Code: ErrBadAddrSuffix, Arg: 1, Off: i, Errno: syscall.EINVAL}, false
		}
		sym = sym[:i]
		p.Return = true
	}
	for i := 0; i < len(sym); i++ {
		if sym[i] == '+' || sym[i] == '-' {
			off, e := ParseInt64(sym[i:], 0)
			if e != nil || off < 0 || off > 0xffffffff {
				return p, &Error{Code: ErrBadProbeAddr, Arg: 1, Off: 0, Errno: syscall.EINVAL}, false
			}
			p.Offset = off
			sym = sym[:i]
			break
		}
	}
	p.Symbol = sym
	p.Func = sym
	if i := indexByte(sym, ':'); i >= 0 {
		p.HasMod = true
		p.Module = sym[:i]
		p.Func = sym[i+1:]
	}
	return p, nil, false
}

// FprobePlace is argv[1] of an f or t line: the symbol (or tracepoint) and
// the %return suffix.
type FprobePlace struct {
	Symbol string
	Return bool
}

// ParseFprobePlace parses argv[1] of an f/t line like the fprobe front end:
// a '%' must start exactly "%return", and never on a tracepoint
// (BAD_ADDR_SUFFIX at the '%'). For tracepoints, when the dialect checks
// tracepoint names, the first byte outside [A-Za-z0-9_] is BAD_TP_NAME.
func ParseFprobePlace(arg string, tracepoint bool, d *Dialect) (FprobePlace, *Error) {
	p := FprobePlace{Symbol: arg}
	if i := indexByte(arg, '%'); i >= 0 {
		if tracepoint || arg[i:] != "%return" {
			return p, &Error{Code: ErrBadAddrSuffix, Arg: 1, Off: i, Errno: syscall.EINVAL}
		}
		p.Symbol = arg[:i]
		p.Return = true
	}
	if tracepoint && d != nil && d.TPNameCheck {
		for i := 0; i < len(p.Symbol); i++ {
			c := p.Symbol[i]
			if !(isAlnum(c) || c == '_') {
				return p, &Error{Code: ErrBadTPName, Arg: 1, Off: i, Errno: syscall.EINVAL}
			}
		}
	}
	return p, nil
}

func indexByte(s string, c byte) int {
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			return i
		}
	}
	return -1
}
