package fetchargs

import (
	"strings"
	"syscall"
	"testing"

	"github.com/ktrace-dev/ktrace/grammar"
	"github.com/ktrace-dev/ktrace/internal/vmtest"
)

// TestBTFStringCharSign covers ":string"/":ustring" on BTF values, whose
// kernel rule (check_prepare_btf_string_fetch) accepts a pointer to, or an
// array of, an 8-bit integer without BTF_INT_SIGNED, after skipping
// typedefs and qualifiers. Linux compiles with -funsigned-char since 6.2,
// so 6.12's BTF records "char" as unsigned; 6.1's records it as signed.
// The newest syntax applied to the 6.1 model must still take plain char
// as a string byte, while "signed char" (s8) and non-byte types stay
// BAD_TYPE4STR.
//
// Expected results were observed on 6.12.95 with tools/vmsh
// (2026-11-29); the 6.1 model with grammar.Latest must give the same
// answers for the same lines, since the types involved (const char *
// filename, struct filename's name and iname, task_struct's comm,
// per_cpu_zonestat's s8 members) are the same C types on both.
func TestBTFStringCharSign(t *testing.T) {
	type want struct {
		body   string        // readback of the first argument
		field  string        // its format field
		signed bool          // its format "signed:"
		code   grammar.Code  // expected error_log code, or ErrNone
		off    int           // caret offset within argv[2]
		errno  syscall.Errno // expected errno when rejected
	}
	tests := []struct {
		line string
		want want
	}{
		// char * parameter.
		{"p:a do_sys_openat2 filename:string", want{body: "filename=filename:string", field: "__data_loc char[] filename", signed: true}},
		{"p:a do_sys_openat2 filename:ustring", want{body: "filename=filename:ustring", field: "__data_loc char[] filename", signed: true}},
		{"r:a do_sys_openat2 filename:string", want{body: "filename=filename:string", field: "__data_loc char[] filename", signed: true}},
		// char * member.
		{"p:c do_filp_open pathname->name:string", want{body: "arg1=pathname->name:string", field: "__data_loc char[] arg1", signed: true}},
		{"p:c do_filp_open pathname->name:ustring", want{body: "arg1=pathname->name:ustring", field: "__data_loc char[] arg1", signed: true}},
		// char[N] and char[] members.
		{"p:d wake_up_process p->comm:string", want{body: "arg1=p->comm:string", field: "__data_loc char[] arg1", signed: true}},
		{"p:d wake_up_process p->comm:ustring", want{body: "arg1=p->comm:ustring", field: "__data_loc char[] arg1", signed: true}},
		{"p:g do_filp_open pathname->iname:string", want{body: "arg1=pathname->iname:string", field: "__data_loc char[] arg1", signed: true}},
		// Not char: int, struct pointer, s8 array, s8.
		{"p:e do_sys_openat2 dfd:string", want{code: grammar.ErrBadType4Str, errno: syscall.EINVAL}},
		{"p:e do_sys_openat2 dfd:ustring", want{code: grammar.ErrBadType4Str, errno: syscall.EINVAL}},
		{"p:f do_sys_openat2 how:string", want{code: grammar.ErrBadType4Str, errno: syscall.EINVAL}},
		{"p:b drain_zonestat pzstats->vm_stat_diff:string", want{code: grammar.ErrBadType4Str, off: UnpredictableOffset, errno: syscall.EINVAL}},
		{"p:k drain_zonestat pzstats->stat_threshold:string", want{code: grammar.ErrBadType4Str, off: UnpredictableOffset, errno: syscall.EINVAL}},
		// Default types keep their sign: s8 stays s8, a pointer is x64.
		{"p:k drain_zonestat pzstats->stat_threshold", want{body: "arg1=pzstats->stat_threshold", field: "s8 arg1", signed: true}},
		{"p:l do_sys_openat2 filename", want{body: "filename=filename", field: "u64 filename"}},
	}
	for _, model := range []string{"6.1", "6.12"} {
		m := vmtest.Model(t, model)
		for _, tc := range tests {
			name := model + "/" + tc.line
			res := runLineDialect(m, grammar.Latest, tc.line)
			if res.skip != "" {
				t.Errorf("%s: skipped: %s", name, res.skip)
				continue
			}
			if tc.want.code != grammar.ErrNone {
				entries, errno := Logs(res.err)
				if errno != tc.want.errno || len(entries) != 1 {
					t.Errorf("%s: %v, want %s (%v)", name, res.err, tc.want.code.Message(), tc.want.errno)
					continue
				}
				if e := entries[0]; e.Code != tc.want.code || e.Arg != 2 || e.Off != tc.want.off {
					t.Errorf("%s: %+v, want %s at (2,%d)", name, e, tc.want.code.Message(), tc.want.off)
				}
				continue
			}
			if res.err != nil {
				t.Errorf("%s: %v", name, res.err)
				continue
			}
			if len(res.args) != 1 {
				t.Errorf("%s: %d arguments, want 1", name, len(res.args))
				continue
			}
			a := res.args[0]
			if a.Text() != tc.want.body {
				t.Errorf("%s: readback %q, want %q", name, a.Text(), tc.want.body)
			}
			if a.FormatField() != tc.want.field || a.Signed() != tc.want.signed {
				t.Errorf("%s: field %q signed %v, want %q signed %v", name, a.FormatField(), a.Signed(), tc.want.field, tc.want.signed)
			}
			if strings.Contains(tc.want.field, "__data_loc") && !strings.Contains(a.PrintFmt(), "%s") {
				t.Errorf("%s: print fmt %q is not a string", name, a.PrintFmt())
			}
		}
	}
}

// TestBTFStringOn61Syntax: with 6.1's own syntax there are no BTF names,
// so the same lines fail before any string check. Observed on 6.1.192
// with tools/vmsh (2026-11-29): BAD_FETCH_ARG, EINVAL, caret at the name.
func TestBTFStringOn61Syntax(t *testing.T) {
	m := vmtest.Model(t, "6.1")
	for _, line := range []string{
		"p:a do_sys_openat2 filename:ustring",
		"p:c do_filp_open pathname->name:string",
		"p:e do_sys_openat2 dfd:string",
	} {
		res := runLine(m, line)
		entries, errno := Logs(res.err)
		if errno != syscall.EINVAL || len(entries) != 1 {
			t.Errorf("%s: %v, want BAD_FETCH_ARG (EINVAL)", line, res.err)
			continue
		}
		if e := entries[0]; e.Code != grammar.ErrBadFetchArg || e.Arg != 2 || e.Off != 0 {
			t.Errorf("%s: %+v, want BAD_FETCH_ARG at (2,0)", line, e)
		}
	}
}
