package fetchargs

import "syscall"

// Integer parsing with the kernel's lib/kstrtox.c semantics, which decide
// what numbers probe definitions accept (base 0 = auto: 0x hex, 0 octal).

func digitVal(c byte) (uint64, bool) {
	switch {
	case c >= '0' && c <= '9':
		return uint64(c - '0'), true
	case c >= 'a' && c <= 'f':
		return uint64(c-'a') + 10, true
	case c >= 'A' && c <= 'F':
		return uint64(c-'A') + 10, true
	}
	return 0, false
}

func isXDigit(c byte) bool { _, ok := digitVal(c); return ok }

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func isAlpha(c byte) bool { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') }

// fixupRadix is _parse_integer_fixup_radix: picks the base for base 0 and
// skips a "0x" prefix when it is followed by a hex digit.
func fixupRadix(s string, base int) (string, int) {
	if base == 0 {
		if len(s) > 0 && s[0] == '0' {
			if len(s) > 2 && (s[1]|0x20) == 'x' && isXDigit(s[2]) {
				base = 16
			} else {
				base = 8
			}
		} else {
			base = 10
		}
	}
	if base == 16 && len(s) > 2 && s[0] == '0' && (s[1]|0x20) == 'x' {
		s = s[2:]
	}
	return s, base
}

// parseInteger is _parse_integer: the value, the number of digits consumed
// and whether it overflowed 64 bits.
func parseInteger(s string, base int) (v uint64, n int, overflow bool) {
	for n < len(s) {
		d, ok := digitVal(s[n])
		if !ok || d >= uint64(base) {
			break
		}
		if v > (^uint64(0)-d)/uint64(base) {
			overflow = true
		}
		v = v*uint64(base) + d
		n++
	}
	return v, n, overflow
}

// kstrtoull parses the whole of s as an unsigned number (a leading '+' is
// allowed, a single trailing newline too). It fails with EINVAL for text
// that is not a number and ERANGE for overflow, as the kernel does.
func kstrtoull(s string, base int) (uint64, syscall.Errno) {
	if len(s) > 0 && s[0] == '+' {
		s = s[1:]
	}
	return kstrtoullRaw(s, base)
}

// kstrtoullRaw is _kstrtoull: no sign allowed.
func kstrtoullRaw(s string, base int) (uint64, syscall.Errno) {
	s, base = fixupRadix(s, base)
	v, n, ovf := parseInteger(s, base)
	if n == 0 {
		return 0, syscall.EINVAL
	}
	if ovf {
		return 0, syscall.ERANGE
	}
	rest := s[n:]
	if rest == "\n" {
		rest = ""
	}
	if rest != "" {
		return 0, syscall.EINVAL
	}
	return v, 0
}

// kstrtoul is kstrtoul on a 64-bit kernel.
func kstrtoul(s string, base int) (uint64, syscall.Errno) { return kstrtoull(s, base) }

// kstrtol is kstrtol on a 64-bit kernel (kstrtoll).
func kstrtol(s string, base int) (int64, syscall.Errno) {
	if len(s) > 0 && s[0] == '-' {
		v, e := kstrtoullRaw(s[1:], base)
		if e != 0 {
			return 0, e
		}
		if v > 1<<63 {
			return 0, syscall.ERANGE
		}
		return -int64(v), 0
	}
	v, e := kstrtoull(s, base)
	if e != 0 {
		return 0, e
	}
	if v > 1<<63-1 {
		return 0, syscall.ERANGE
	}
	return int64(v), 0
}

// kstrtouint is kstrtouint: like kstrtoull but limited to 32 bits.
func kstrtouint(s string, base int) (uint32, syscall.Errno) {
	v, e := kstrtoull(s, base)
	if e != 0 {
		return 0, e
	}
	if v > 0xffffffff {
		return 0, syscall.ERANGE
	}
	return uint32(v), 0
}

// simpleStrtoul is simple_strtoul: parses as many digits as it can and
// returns the value and the unparsed rest; it never fails.
func simpleStrtoul(s string, base int) (uint64, string) {
	s, base = fixupRadix(s, base)
	v, n, _ := parseInteger(s, base)
	return v, s[n:]
}
