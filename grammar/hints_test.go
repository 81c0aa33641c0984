package grammar

import "testing"

func TestEditDistance(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"do_sys_opnat2", "do_sys_openat2", 1},
		{"rdi", "di", 1},
		{"", "abc", 3},
		{"kitten", "sitting", 3},
		{"same", "same", 0},
	} {
		if got := EditDistance(tc.a, tc.b, 10); got != tc.want {
			t.Errorf("EditDistance(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
	if got := EditDistance("abcdef", "uvwxyz", 2); got != 3 {
		t.Errorf("bounded distance = %d, want 3 (max+1)", got)
	}
	long := string(make([]byte, 200))
	if got := EditDistance(long, long+"x", 5); got != 1 {
		t.Errorf("long names: %d", got)
	}
}

func TestClosest(t *testing.T) {
	types := []string{"u8", "u16", "u32", "u64", "s8", "s16", "s32", "s64", "x64", "string", "ustring", "symstr"}
	for in, want := range map[string]string{"strin": "string", "u33": "u32", "sting": "string"} {
		if got, ok := Closest(in, types); !ok || got != want {
			t.Errorf("Closest(%q) = %q, %v; want %q", in, got, ok, want)
		}
	}
	if got, ok := Closest("completely_different", types); ok {
		t.Errorf("Closest of a far word = %q", got)
	}
}

// TestHintTable checks that every hint belongs to a defined error code.
func TestHintTable(t *testing.T) {
	for c, k := range hintTable {
		if c <= ErrNone || c >= numCodes {
			t.Errorf("hint for undefined code %d", int(c))
		}
		if k == HintNone {
			t.Errorf("%s: HintNone in the table", c.Name())
		}
	}
	if len(HintCodes()) != len(hintTable) {
		t.Errorf("HintCodes lists %d codes, the table %d", len(HintCodes()), len(hintTable))
	}
}
