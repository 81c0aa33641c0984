package grammar

import (
	"errors"
	"fmt"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// ErrnoName is the symbolic name of an errno ("EINVAL"), as tests, JSON
// output and messages print it; an errno without a name prints as
// "errno N".
func ErrnoName(e syscall.Errno) string {
	if n := unix.ErrnoName(e); n != "" {
		return n
	}
	return fmt.Sprintf("errno %d", int(e))
}

// ErrnoOf is the errno a write(2) of a failed operation returns: the one
// err wraps, else EINVAL, the kernel's answer for a line it rejects
// without saying more.
func ErrnoOf(err error) syscall.Errno {
	var e syscall.Errno
	if errors.As(err, &e) {
		return e
	}
	return syscall.EINVAL
}

// Strerror is the C library's text for an errno ("Invalid argument"), as
// busybox prints it.
func Strerror(e syscall.Errno) string {
	s := e.Error()
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
