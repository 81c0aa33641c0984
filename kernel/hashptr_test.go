package kernel

import "testing"

func TestNoHashPointers(t *testing.T) {
	for _, c := range []struct {
		cmdline string
		want    bool
	}{
		{"console=ttyS0 quiet panic=-1 nokaslr no_hash_pointers no_timer_check\n", true},
		{"no_hash_pointers", true},
		{"BOOT_IMAGE=/vmlinuz root=/dev/sda1 ro quiet\n", false},
		{"ro hash_pointers=never", true},
		{"no_hash_pointers_x=1 hash_pointers=auto", false},
		{"", false},
	} {
		if got := noHashPointers(c.cmdline); got != c.want {
			t.Errorf("noHashPointers(%q) = %v, want %v", c.cmdline, got, c.want)
		}
	}
}
