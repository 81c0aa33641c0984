package filter

import (
	"encoding/binary"
	"testing"
)

// record builds a record for testFormat: a, b, c, d and the string s.
func record(a uint64, b int32, c uint8, d int16, s string) []byte {
	rec := make([]byte, 63, 63+len(s)+1)
	binary.LittleEndian.PutUint16(rec[0:], 1)
	binary.LittleEndian.PutUint64(rec[16:], a)
	binary.LittleEndian.PutUint32(rec[24:], uint32(b))
	rec[28] = c
	binary.LittleEndian.PutUint16(rec[29:], uint16(d))
	binary.LittleEndian.PutUint32(rec[31:], uint32(len(rec))|uint32(len(s)+1)<<16)
	return append(append(rec, s...), 0)
}

func TestMatch(t *testing.T) {
	ev, env := testEnv(t, "6.12")
	ctx := &Context{CPU: 0, CPUs: 1}
	copy(ctx.Comm[:], "bash")
	rec := record(5, -3, 200, -1, "hello")
	tests := []struct {
		expr string
		want bool
	}{
		{"a == 5", true},
		{"a != 5", false},
		{"a > 4 && a < 6", true},
		{"a >= 6 || b < 0", true},
		{"b < 0", true},          // signed
		{"b > 4294967290", true}, // s32: the value truncates to -6
		{"c == 200", true},
		{"c == 456", true}, // u8: 456 truncates to 200
		{"c > 100", true},
		{"d == -1", true},
		{"d == 65535", true}, // equality compares raw bits
		{"a & 4", true},
		{"a & 2", false},
		{"!(a == 5)", false},
		{"!a == 5 || b == -3", true},
		{"a == 1 || b == 2 && c == 200", false},
		{"(a == 1 || b == -3) && c == 200", true},
		{"arr == 0", false}, // a 16-byte field never matches
		{"arr != 0", false},
		{"s == \"hello\"", true},
		{"s == \"hell\"", false},
		{"s != \"hell\"", true},
		{"s ~ \"hel*\"", true},
		{"s ~ \"*llo\"", true},
		{"s ~ \"*ell*\"", true},
		{"s ~ \"h?l[a-m]o\"", true},
		{"s ~ \"h*o\"", true},
		{"s ~ \"!h*o\"", false},
		{"s ~ \"!world\"", true},
		{"comm == \"bash\"", true},
		{"comm ~ \"ba*\"", true},
		{"comm ~ \"*sh\"", false}, // ends-with looks at the end of the 16-byte buffer
		{"comm ~ \"*as*\"", true},
		{"cpu == 0", true},
		{"cpu & 1", false}, // & on the CPU never matches
		{"cpu == CPUS{0}", true},
		{"common_type == 1", true},
		{"a == 1 &&", false},
		{"a == 5 &&", true},
	}
	for _, tc := range tests {
		f, err := Parse(tc.expr, ev, env)
		if err != nil {
			t.Errorf("%q: %v", tc.expr, err)
			continue
		}
		if got := f.Match(rec, ctx); got != tc.want {
			t.Errorf("%q = %v, want %v (tree %s)", tc.expr, got, tc.want, String(f.Root))
		}
	}
}

func TestGlob(t *testing.T) {
	for _, tc := range []struct {
		pat, s string
		want   bool
	}{
		{"a*b", "axxb", true},
		{"a*b", "axxbc", false},
		{"*", "", true},
		{"?", "", false},
		{"[!a]x", "bx", true},
		{"[!a]x", "ax", false},
		{"[a-]x", "-x", true},
		{"[]]", "]", true},
		{"\\*", "*", true},
		{"[abc", "[abc", true},
		{"a*b*c", "abxbc", true},
	} {
		if got := globMatch([]byte(tc.pat), []byte(tc.s)); got != tc.want {
			t.Errorf("glob(%q, %q) = %v", tc.pat, tc.s, got)
		}
	}
}

func TestTree(t *testing.T) {
	ev, env := testEnv(t, "6.12")
	for _, tc := range []struct{ expr, want string }{
		{"a == 1 || b == 2 && c == 3", "(a == 1 || (b == 2 && c == 3))"},
		{"!(a == 1 || b == 2) && c == 3", "(!(a == 1 || b == 2) && c == 3)"},
		{"a == 1 && b == 2 ||", "(a == 1 && b == 2)"},
	} {
		f, err := Parse(tc.expr, ev, env)
		if err != nil {
			t.Fatal(err)
		}
		if got := String(f.Root); got != tc.want {
			t.Errorf("%q: %s, want %s", tc.expr, got, tc.want)
		}
	}
}
