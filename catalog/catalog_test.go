package catalog

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/ktrace-dev/ktrace/grammar"
	"github.com/ktrace-dev/ktrace/internal/vmtest"
)

// The defaults are the types the pinned kernels give each fetch argument
// when a line names none (their format files, read in the VM).
func TestDescribeFunction(t *testing.T) {
	for _, tc := range []struct {
		release string
		fetch   []string
		types   []string
		ret     string
	}{
		{"6.12", []string{"$arg1", "$arg2", "$arg3"}, []string{"s32", "x64", "x64"}, "s64"},
		{"6.1", []string{"%di", "%si", "%dx"}, []string{"x64", "x64", "x64"}, "x64"},
	} {
		t.Run(tc.release, func(t *testing.T) {
			m := vmtest.Model(t, tc.release)
			major, minor, _ := m.KernelVersion()
			a, err := Describe(m, grammar.DialectFor(major, minor), "do_sys_openat2")
			if err != nil {
				t.Fatal(err)
			}
			if want := "long int do_sys_openat2(int dfd, const char *filename, struct open_how *how)"; a.Signature != want {
				t.Errorf("signature %q, want %q", a.Signature, want)
			}
			if len(a.Params) != 3 {
				t.Fatalf("%d params, want 3", len(a.Params))
			}
			for i, p := range a.Params {
				if p.Fetch != tc.fetch[i] || p.FetchType == nil || *p.FetchType != tc.types[i] {
					t.Errorf("param %d: fetch %q type %v, want %q %q", i, p.Fetch, p.FetchType, tc.fetch[i], tc.types[i])
				}
			}
			if a.Return == nil || a.Return.FetchType == nil || *a.Return.FetchType != tc.ret {
				t.Errorf("return: %+v, want type %q", a.Return, tc.ret)
			}
		})
	}
}

func TestDescribeUnknown(t *testing.T) {
	m := vmtest.Model(t, "6.12")
	_, err := Describe(m, grammar.Latest, "vfs_reed")
	if !errors.Is(err, ErrNotFound) {
		t.Fatalf("err = %v, want ErrNotFound", err)
	}
	if want := "args vfs_reed: no BTF function vfs_reed in the model\nhint: did you mean vfs_read?"; err.Error() != want {
		t.Errorf("err = %q, want %q", err, want)
	}
}

func TestTracepointsGlobs(t *testing.T) {
	m := vmtest.Model(t, "6.12")
	tps, _, err := Tracepoints(m, grammar.Latest, []string{"sched:sched_switch", "sys_enter_openat"})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, tp := range tps {
		got[tp.Spec()] = tp.Tprobe
	}
	if len(got) != 2 || !got["sched:sched_switch"] {
		t.Errorf("got %v, want sched:sched_switch (t) and syscalls:sys_enter_openat", got)
	}
	if _, _, err := Tracepoints(m, grammar.Latest, []string{"sched:[x"}); !errors.Is(err, ErrBadGlob) {
		t.Errorf("bad glob: err = %v, want ErrBadGlob", err)
	}
}

// An Arg and a Field keep their JSON keys in order, their Decl's first.
func TestDeclJSON(t *testing.T) {
	ft := "s32"
	b, err := json.Marshal(Arg{Decl: Decl{Name: "dfd", Type: "int"}, Fetch: "$arg1", Reg: "%di", FetchType: &ft})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"name":"dfd","type":"int","fetch":"$arg1","reg":"%di","fetch_type":"s32","error":null}`; string(b) != want {
		t.Errorf("Arg JSON %s, want %s", b, want)
	}
	b, err = json.Marshal(Field{Decl: Decl{Name: "prev_pid", Type: "pid_t"}, Offset: 24, Size: 4, Signed: true})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"name":"prev_pid","type":"pid_t","offset":24,"size":4,"signed":true}`; string(b) != want {
		t.Errorf("Field JSON %s, want %s", b, want)
	}
}
