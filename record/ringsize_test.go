package record

import "testing"

func TestParseRingSize(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int
		ok   bool
	}{
		{"", 0, true},
		{"32M", 32 << 20, true},
		{"64k", 64 << 10, true},
		{"1G", 1 << 30, true},
		{"4096", 4096, true},
		{"3M", 0, false},
		{"2G", 0, false},
		{"12", 0, false},
		{"x", 0, false},
		{"-8M", 0, false},
	} {
		got, err := ParseRingSize(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("ParseRingSize(%q) = %d, %v; want %d (ok %v)", tc.in, got, err, tc.want, tc.ok)
		}
	}
}
