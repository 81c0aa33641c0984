package live

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"testing"

	"github.com/ktrace-dev/ktrace/tracer"
)

// A failed attach fails the enable write with the errno the kernel passed
// on, else the nearest one.
func TestAttachErrno(t *testing.T) {
	tests := []struct {
		err  error
		want syscall.Errno
	}{
		{fmt.Errorf("tracer: attaching kprobes/a: %w", syscall.EILSEQ), syscall.EILSEQ},
		{fmt.Errorf("tracer: attaching kprobes/a: symbol vfs_nope: %w", os.ErrNotExist), syscall.ENOENT},
		{fmt.Errorf("tracer: %w", os.ErrPermission), syscall.EPERM},
		{fmt.Errorf("tracer: kprobes/t: %w", tracer.ErrNotSupported), syscall.EINVAL},
		{errors.New("tracer: no probes to attach"), syscall.EINVAL},
	}
	for _, tt := range tests {
		if got := attachErrno(tt.err); got != tt.want {
			t.Errorf("attachErrno(%v) = %v, want %v", tt.err, got, tt.want)
		}
	}
}
