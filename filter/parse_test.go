package filter

import (
	"syscall"
	"testing"

	"github.com/ktrace-dev/ktrace/grammar"
)

// testFormat is the format of "p:kprobes/f vfs_read a=%di:u64 b=%si:s32
// c=%dx:u8 d=%cx:s16 s=+0(%si):string x=%dx:x32 arr=+0(%di):u32[4]
// sy=%di:symbol" on 6.12.
const testFormat = `name: f
ID: 1554
format:
	field:unsigned short common_type;	offset:0;	size:2;	signed:0;
	field:unsigned char common_flags;	offset:2;	size:1;	signed:0;
	field:unsigned char common_preempt_count;	offset:3;	size:1;	signed:0;
	field:int common_pid;	offset:4;	size:4;	signed:1;

	field:unsigned long __probe_ip;	offset:8;	size:8;	signed:0;
	field:u64 a;	offset:16;	size:8;	signed:0;
	field:s32 b;	offset:24;	size:4;	signed:1;
	field:u8 c;	offset:28;	size:1;	signed:0;
	field:s16 d;	offset:29;	size:2;	signed:1;
	field:__data_loc char[] s;	offset:31;	size:4;	signed:1;
	field:u32 x;	offset:35;	size:4;	signed:0;
	field:u32 arr[];	offset:39;	size:16;	signed:0;
	field:u64 sy;	offset:55;	size:8;	signed:0;

print fmt: "(%lx) a=%Lu", REC->__probe_ip, REC->a
`

type fakeSyms map[string][2]uint64

func (s fakeSyms) LookupName(name string) (uint64, bool) { v, ok := s[name]; return v[0], ok }
func (s fakeSyms) SymbolExtent(addr uint64) (uint64, uint64, bool) {
	for _, v := range s {
		if addr >= v[0] && addr < v[0]+v[1] {
			return v[0], v[1], true
		}
	}
	return 0, 0, false
}

func testEnv(t *testing.T, release string) (*Event, *Env) {
	t.Helper()
	var d *grammar.Dialect
	for _, x := range grammar.Dialects() {
		if x.Name == release {
			d = x
		}
	}
	ev, err := FieldsFromFormat(testFormat, d.FilterCPUs)
	if err != nil {
		t.Fatal(err)
	}
	syms := fakeSyms{"vfs_read": {0xffffffff81400000, 0x100}, "_text": {0xffffffff81000000, 0x10}}
	return ev, &Env{Dialect: d, CPUs: 1, Symbols: syms}
}

// The expected results were seen on the pinned kernels (tools/vmsh, one
// CPU): code, error_log caret and errno.
func TestParseErrors(t *testing.T) {
	type want struct {
		code  grammar.FilterCode
		pos   int
		errno syscall.Errno
	}
	ok := want{}
	tests := []struct {
		expr      string
		v612, v61 want
	}{
		{"a == 1", ok, ok},
		{"a == 1 &&", ok, want{grammar.FiltInvalidFilter, 9, syscall.EINVAL}},
		{"a == 1 && !", ok, want{grammar.FiltInvalidFilter, 11, syscall.EINVAL}},
		{"a == 1 || b == 2 &&", want{grammar.FiltNone, 0, syscall.EINVAL}, want{grammar.FiltInvalidFilter, 19, syscall.EINVAL}},
		{"a == 1 && b == 2 ||", ok, want{grammar.FiltInvalidFilter, 19, syscall.EINVAL}},
		{"(a == 1 &&)", want{0, 0, syscall.EPERM}, want{0, 0, syscall.EPERM}},
		{"!", want{grammar.FiltNoFilter, 1, syscall.EINVAL}, want{grammar.FiltNoFilter, 1, syscall.EINVAL}},
		{"&& a == 1", want{0, 0, syscall.EPERM}, want{0, 0, syscall.EPERM}},
		{"a == (1", want{grammar.FiltTooManyOpen, 5, syscall.ENOENT}, want{grammar.FiltTooManyOpen, 5, syscall.ENOENT}},
		{"(((a == 1)", want{grammar.FiltTooManyOpen, 1, syscall.ENOENT}, want{grammar.FiltTooManyOpen, 1, syscall.ENOENT}},
		{"a == 1)", want{grammar.FiltTooManyClose, 6, syscall.EPERM}, want{grammar.FiltTooManyClose, 6, syscall.EPERM}},
		{"s == \"x", want{grammar.FiltMissingQuote, 5, syscall.ESRCH}, want{grammar.FiltMissingQuote, 5, syscall.ESRCH}},
		{"()", want{0, 0, syscall.EINVAL}, want{0, 0, syscall.EINVAL}},
		{"a ~ 1", want{grammar.FiltIllegalFieldOp, 5, syscall.EINVAL}, want{grammar.FiltIllegalFieldOp, 5, syscall.EINVAL}},
		{"a == \"x\"", want{grammar.FiltExpectDigit, 6, syscall.EINVAL}, want{grammar.FiltExpectDigit, 6, syscall.EINVAL}},
		{"a == x", want{grammar.FiltInvalidValue, 6, syscall.EINVAL}, want{grammar.FiltInvalidValue, 6, syscall.EINVAL}},
		{"s == 1", want{grammar.FiltExpectString, 6, syscall.EINVAL}, want{grammar.FiltExpectString, 6, syscall.EINVAL}},
		{"nosuch == 1", want{grammar.FiltFieldNotFound, 7, syscall.EINVAL}, want{grammar.FiltFieldNotFound, 7, syscall.EINVAL}},
		{"   nosuch == 1", want{grammar.FiltFieldNotFound, 10, syscall.EINVAL}, want{grammar.FiltFieldNotFound, 10, syscall.EINVAL}},
		{"a === 1", want{grammar.FiltInvalidValue, 5, syscall.EINVAL}, want{grammar.FiltInvalidValue, 5, syscall.EINVAL}},
		{"s !~ \"x\"", want{grammar.FiltInvalidOp, 3, syscall.EINVAL}, want{grammar.FiltInvalidOp, 3, syscall.EINVAL}},
		{"a == 123456789012345678901234", want{grammar.FiltOperandTooLong, 30, syscall.EINVAL}, want{grammar.FiltOperandTooLong, 30, syscall.EINVAL}},
		{"a == -1", want{grammar.FiltIllegalIntval, 6, syscall.EINVAL}, want{grammar.FiltIllegalIntval, 6, syscall.EINVAL}},
		{"b == -1", ok, ok},
		{"a == 1 b == 2", want{grammar.FiltTooManyPreds, 7, syscall.EPERM}, want{grammar.FiltTooManyPreds, 7, syscall.EPERM}},
		{"a == 1 &&& b == 2", want{0, 0, syscall.EPERM}, want{0, 0, syscall.EPERM}},
		{"__probe_ip.function == vfs_read", ok, want{grammar.FiltInvalidOp, 11, syscall.EINVAL}},
		{"__probe_ip.function == nosuchfn", want{grammar.FiltNoFunction, 32, syscall.EINVAL}, want{grammar.FiltInvalidOp, 11, syscall.EINVAL}},
		{"__probe_ip.function < vfs_read", want{grammar.FiltInvalidOp, 23, syscall.EINVAL}, want{grammar.FiltInvalidOp, 11, syscall.EINVAL}},
		{"__probe_ip.function == 0", want{grammar.FiltNoFunction, 25, syscall.EINVAL}, want{grammar.FiltInvalidOp, 11, syscall.EINVAL}},
		{"__probe_ip.function == 0xffffffff81000000", ok, want{grammar.FiltInvalidOp, 11, syscall.EINVAL}},
		{"b.function == vfs_read", want{grammar.FiltIllegalFieldOp, 15, syscall.EINVAL}, want{grammar.FiltInvalidOp, 2, syscall.EINVAL}},
		{"cpu == CPUS{0}", ok, want{grammar.FiltInvalidValue, 8, syscall.EINVAL}},
		{"cpu & CPUS{0-1}", want{grammar.FiltInvalidCPUList, 15, syscall.EINVAL}, want{grammar.FiltInvalidValue, 7, syscall.EINVAL}},
		{"a < CPUS{1}", want{grammar.FiltIllegalFieldOp, 5, syscall.EINVAL}, want{grammar.FiltInvalidValue, 5, syscall.EINVAL}},
		{"cpu == CPUS", want{grammar.FiltMissingBraceOpen, 13, syscall.EINVAL}, want{grammar.FiltInvalidValue, 8, syscall.EINVAL}},
		{"cpu == CPUS{", want{grammar.FiltMissingBraceClose, 13, syscall.EINVAL}, want{grammar.FiltInvalidValue, 8, syscall.EINVAL}},
		{"cpu == CPUS{}", want{grammar.FiltInvalidCPUList, 13, syscall.EINVAL}, want{grammar.FiltInvalidValue, 8, syscall.EINVAL}},
		{"s == CPUS{1}", want{grammar.FiltIllegalFieldOp, 6, syscall.EINVAL}, want{grammar.FiltInvalidValue, 6, syscall.EINVAL}},
		{"common_comm == \"x\"", want{grammar.FiltFieldNotFound, 12, syscall.EINVAL}, want{grammar.FiltFieldNotFound, 12, syscall.EINVAL}},
		{"stacktrace == 1", ok, want{grammar.FiltFieldNotFound, 11, syscall.EINVAL}},
		{"a.ustring == \"x\"", want{grammar.FiltExpectDigit, 14, syscall.EINVAL}, want{grammar.FiltExpectDigit, 14, syscall.EINVAL}},
		{"a.hex == 1", want{grammar.FiltInvalidOp, 2, syscall.EINVAL}, want{grammar.FiltInvalidOp, 2, syscall.EINVAL}},
		{"s == \"x\" \"y\"", want{grammar.FiltTooManyPreds, 9, syscall.EPERM}, want{grammar.FiltTooManyPreds, 9, syscall.EPERM}},
		{"\"a\" == 1", want{0, 0, syscall.EPERM}, want{0, 0, syscall.EPERM}},
		{"comm == sh", want{grammar.FiltInvalidValue, 9, syscall.EINVAL}, want{grammar.FiltInvalidValue, 9, syscall.EINVAL}},
		{"a == 1 && (b == 2) || (c == 3 && (d == 4))", ok, ok},
		{"a==1&&b<2", ok, ok},
		{"!!a == 1", ok, ok},
	}
	for _, tc := range tests {
		for _, rel := range []string{"6.12", "6.1"} {
			w := tc.v612
			if rel == "6.1" {
				w = tc.v61
			}
			ev, env := testEnv(t, rel)
			_, err := Parse(tc.expr, ev, env)
			switch {
			case err == nil && w != ok:
				t.Errorf("%s %q: accepted, want %v at %d (%v)", rel, tc.expr, w.code, w.pos, w.errno)
			case err != nil && w == ok:
				t.Errorf("%s %q: %v (%v), want accepted", rel, tc.expr, err, err.Errno)
			case err != nil && (err.Code != w.code || err.LogPos() != w.pos || err.Errno != w.errno):
				t.Errorf("%s %q: %v at %d (%v), want %v at %d (%v)", rel, tc.expr, err.Code, err.LogPos(), err.Errno, w.code, w.pos, w.errno)
			}
		}
	}
}

// The filter file after a rejected write, as the kernels print it.
func TestErrorText(t *testing.T) {
	ev, env := testEnv(t, "6.12")
	for _, tc := range []struct{ expr, want string }{
		{"a == (1", "a == (1\n     ^\nparse_error: Too many '('\n"},
		{"== 1", "== 1\nError: (0)\n"},
		{"!", "!\n ^\nparse_error: No filter found\n"},
		{"cpu == CPUS", "cpu == CPUS\n           ^\nparse_error: Missing '{'\n"},
	} {
		_, err := Parse(tc.expr, ev, env)
		if err == nil {
			t.Fatalf("%q accepted", tc.expr)
		}
		if got := err.Text(tc.expr); got != tc.want {
			t.Errorf("%q: %q, want %q", tc.expr, got, tc.want)
		}
	}
}
