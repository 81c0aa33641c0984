package fetchargs

import (
	"errors"
	"syscall"

	"github.com/ktrace-dev/ktrace/grammar"
)

// Integer parsing with the kernel's lib/kstrtox.c semantics, which decide
// what numbers probe definitions accept (base 0 = auto: 0x hex, 0 octal).
// The parsing itself is grammar's (ParseUint64 and friends), the one
// kstrtox of ktrace; these return the errno the kernel's callers see.

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func isAlpha(c byte) bool { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') }

// kstrtoErrno maps grammar's kstrtox errors to the kernel's errnos.
func kstrtoErrno(err error) syscall.Errno {
	switch {
	case err == nil:
		return 0
	case errors.Is(err, grammar.ErrRange):
		return syscall.ERANGE
	}
	return syscall.EINVAL
}

// kstrtoull parses the whole of s as an unsigned number (a leading '+' is
// allowed, a single trailing newline too). It fails with EINVAL for text
// that is not a number and ERANGE for overflow, as the kernel does.
func kstrtoull(s string, base int) (uint64, syscall.Errno) {
	v, err := grammar.ParseUint64(s, base)
	return v, kstrtoErrno(err)
}

// kstrtoul is kstrtoul on a 64-bit kernel.
func kstrtoul(s string, base int) (uint64, syscall.Errno) { return kstrtoull(s, base) }

// kstrtol is kstrtol on a 64-bit kernel (kstrtoll).
func kstrtol(s string, base int) (int64, syscall.Errno) {
	v, err := grammar.ParseInt64(s, base)
	return v, kstrtoErrno(err)
}

// kstrtouint is kstrtouint: like kstrtoull but limited to 32 bits.
func kstrtouint(s string, base int) (uint32, syscall.Errno) {
	v, err := grammar.ParseUint32(s, base)
	return v, kstrtoErrno(err)
}

// simpleStrtoul is simple_strtoul: parses as many digits as it can and
// returns the value and the unparsed rest; it never fails.
func simpleStrtoul(s string, base int) (uint64, string) { return grammar.SimpleStrtoul(s, base) }
