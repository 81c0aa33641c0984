package shell

import (
	"bytes"
	"testing"
)

// TestPrintf: printf's output for formats with flags, widths and
// precisions, escapes, %b and %c, reused formats and bad numbers, as
// busybox's printf gives it (checked with busybox 1.35's printf).
func TestPrintf(t *testing.T) {
	tests := []struct {
		args      []string
		out, errs string
		status    int
	}{
		{args: []string{`%.3s|`, "abcdef"}, out: "abc|"},
		{args: []string{`%-6s|%5d|%x|%05.1f\n`, "ab", "42", "255", "3.14159"}, out: "ab    |   42|ff|003.1\n"},
		{args: []string{`X%.0s`, "1", "2", "3"}, out: "XXX"},
		{args: []string{`%s-%s\n`, "a", "b", "c"}, out: "a-b\nc-\n"},
		{args: []string{`%d %d\n`, "'A", "010"}, out: "65 8\n"},
		{args: []string{`%i|%u|%X\n`, "0x1f", "-1", "3054"}, out: "31|18446744073709551615|BEE\n"},
		{args: []string{`%#o %#x\n`, "8", "255"}, out: "010 0xff\n"},
		{args: []string{`%*d|%-*d|\n`, "5", "42", "4", "7"}, out: "   42|7   |\n"},
		{args: []string{`%c%c\n`, "hello", "w"}, out: "hw\n"},
		{args: []string{`%5.2f|%e|%g|%g\n`, "3.14159", "12345.678", "0.0001", "1000000"}, out: " 3.14|1.234568e+04|0.0001|1e+06\n"},
		{args: []string{`\101\t%%\n`}, out: "A\t%\n"},
		{args: []string{`%b|%b`, `a\tb`, `\0101\c`, "rest"}, out: "a\tb|A"},
		{args: []string{`[%s][%d]\n`}, out: "[][0]\n", errs: "printf: invalid number ''\n", status: 1},
		{args: []string{`%c|%d|%f|\n`, "", "12abc", "1.5x"}, out: "\x00|0|0.000000|\n", errs: "printf: invalid number '12abc'\nprintf: invalid number '1.5x'\n", status: 1},
		{args: []string{`%d\n`, "abc"}, out: "0\n", errs: "printf: invalid number 'abc'\n", status: 1},
		{args: []string{`a\cb`}, out: "a"},
	}
	for _, tt := range tests {
		var out, errs bytes.Buffer
		st := shPrintf(&out, &errs, tt.args)
		if out.String() != tt.out || errs.String() != tt.errs || st != tt.status {
			t.Errorf("printf %q: %q, stderr %q, status %d; want %q, %q, %d", tt.args, out.String(), errs.String(), st, tt.out, tt.errs, tt.status)
		}
	}
}
