package live

import (
	"fmt"
	"syscall"
	"testing"
)

// TestLinkExists: cilium/ebpf's perf link error carries EEXIST as text
// only ("cannot create bpf perf link: %v"); a wrapped errno counts too.
func TestLinkExists(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{fmt.Errorf("cannot create bpf perf link: %v", syscall.EEXIST), true},
		{fmt.Errorf("attach: %w", syscall.EEXIST), true},
		{fmt.Errorf("cannot create bpf perf link: %v", syscall.EPERM), false},
		{nil, false},
	} {
		if got := linkExists(c.err); got != c.want {
			t.Errorf("linkExists(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}
