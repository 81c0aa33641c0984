package grammar

import (
	"errors"
	"math"
)

// Errors of the kernel's kstrto*() family: EINVAL for malformed text,
// ERANGE for overflow. Callers usually only need to know that parsing failed.
var (
	ErrSyntax = errors.New("invalid number")
	ErrRange  = errors.New("number out of range")
)

// fixupRadix mirrors _parse_integer_fixup_radix: with base 0 a leading "0x"
// followed by a hex digit selects 16, another leading '0' selects 8, anything
// else 10. For base 16 a "0x" prefix is skipped.
func fixupRadix(s string, base int) (string, int) {
	if base == 0 {
		if len(s) > 0 && s[0] == '0' {
			if len(s) > 2 && lower(s[1]) == 'x' && isXDigit(s[2]) {
				base = 16
			} else {
				base = 8
			}
		} else {
			base = 10
		}
	}
	if base == 16 && len(s) >= 2 && s[0] == '0' && lower(s[1]) == 'x' {
		s = s[2:]
	}
	return s, base
}

func lower(c byte) byte {
	if c >= 'A' && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

func isXDigit(c byte) bool {
	return (c >= '0' && c <= '9') || (lower(c) >= 'a' && lower(c) <= 'f')
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// parseInteger is _parse_integer: the value of the digits of base at the
// start of s, how many there are, and whether the value overflowed 64
// bits.
func parseInteger(s string, base int) (v uint64, n int, overflow bool) {
	for ; n < len(s); n++ {
		c := s[n]
		var d int
		switch {
		case c >= '0' && c <= '9':
			d = int(c - '0')
		case lower(c) >= 'a' && lower(c) <= 'f':
			d = int(lower(c)-'a') + 10
		default:
			d = 16
		}
		if d >= base {
			break
		}
		if v > (math.MaxUint64-uint64(d))/uint64(base) {
			overflow = true
		}
		v = v*uint64(base) + uint64(d)
	}
	return v, n, overflow
}

// kstrtoullNoSign is _kstrtoull: digits in the (fixed-up) base, an optional
// single trailing newline, nothing else.
func kstrtoullNoSign(s string, base int) (uint64, error) {
	s, base = fixupRadix(s, base)
	v, i, overflow := parseInteger(s, base)
	if overflow {
		return 0, ErrRange
	}
	if i == 0 {
		return 0, ErrSyntax
	}
	rest := s[i:]
	if len(rest) > 0 && rest[0] == '\n' {
		rest = rest[1:]
	}
	if len(rest) != 0 {
		return 0, ErrSyntax
	}
	return v, nil
}

// SimpleStrtoul is simple_strtoul: as many digits of base as s starts
// with (after the radix fix-up), and the text after them. It never fails;
// an overflow wraps, as in the kernel.
func SimpleStrtoul(s string, base int) (uint64, string) {
	s, base = fixupRadix(s, base)
	v, n, _ := parseInteger(s, base)
	return v, s[n:]
}

// ParseUint64 is the kernel's kstrtoull (and kstrtoul on 64-bit): an
// optional '+', then digits in base (0 = auto-detect 0x/0 prefixes).
func ParseUint64(s string, base int) (uint64, error) {
	if len(s) > 0 && s[0] == '+' {
		s = s[1:]
	}
	return kstrtoullNoSign(s, base)
}

// ParseUint32 is kstrtouint: ParseUint64 limited to 32 bits.
func ParseUint32(s string, base int) (uint32, error) {
	v, err := ParseUint64(s, base)
	if err != nil {
		return 0, err
	}
	if v > math.MaxUint32 {
		return 0, ErrRange
	}
	return uint32(v), nil
}

// ParseInt64 is kstrtoll (and kstrtol on 64-bit): a leading '-' negates,
// otherwise ParseUint64 rules apply ("+-1" is malformed).
func ParseInt64(s string, base int) (int64, error) {
	if len(s) > 0 && s[0] == '-' {
		v, err := kstrtoullNoSign(s[1:], base)
		if err != nil {
			return 0, err
		}
		if int64(-v) > 0 {
			return 0, ErrRange
		}
		return int64(-v), nil
	}
	v, err := ParseUint64(s, base)
	if err != nil {
		return 0, err
	}
	if int64(v) < 0 {
		return 0, ErrRange
	}
	return int64(v), nil
}
