package fetchargs

import (
	"syscall"
	"testing"

	"github.com/ktrace-dev/ktrace/grammar"
	"github.com/ktrace-dev/ktrace/internal/vmtest"
)

// TestNoBTFArgsDialect covers a 6.5+ kernel built without
// CONFIG_PROBE_EVENTS_BTF_ARGS, which no pinned kernel is: the expected
// results follow the kernel's compiled-out stubs (query_btf_context fails
// with -EOPNOTSUPP, parse_btf_arg logs NOSUP_BTFARG, "$retval…" is a
// prefix match returning the raw register).
func TestNoBTFArgsDialect(t *testing.T) {
	m := vmtest.Model(t, "6.12")
	d := *grammar.Latest
	d.BTFArgs = false
	tests := []struct {
		args    []string
		ret     bool
		readErr []grammar.Code
		errno   syscall.Errno
		body    string
	}{
		{args: []string{"file"}, readErr: []grammar.Code{grammar.ErrNosupBTFArg}, errno: syscall.EOPNOTSUPP},
		{args: []string{"$retvalx"}, ret: true, body: "arg1=$retvalx"},
		{args: []string{"$arg1"}, body: "arg1=$arg1"},
		{args: []string{"$arg*"}, readErr: []grammar.Code{grammar.ErrNosupBTFArg, grammar.ErrBadVar}, errno: syscall.EINVAL},
	}
	for _, tc := range tests {
		ctx := &Context{Model: m, Dialect: &d, Kind: KProbe, Return: tc.ret, Entry: !tc.ret, Func: "vfs_read"}
		argv := append([]string{"p", "vfs_read"}, tc.args...)
		toks, err := PrepareArgs(ctx, argv)
		var a *Arg
		if err == nil {
			a, err = Parse(ctx, toks[0], 0, nil)
		}
		if tc.errno != 0 {
			entries, errno := Logs(err)
			if errno != tc.errno || len(entries) != len(tc.readErr) {
				t.Errorf("%v: %v, want %v %v", tc.args, err, tc.errno, tc.readErr)
				continue
			}
			for i, e := range entries {
				if e.Code != tc.readErr[i] || e.Arg != 2 || e.Off != 0 {
					t.Errorf("%v: entry %d %+v, want %s at (2,0)", tc.args, i, e, tc.readErr[i])
				}
			}
			continue
		}
		if err != nil {
			t.Errorf("%v: %v", tc.args, err)
			continue
		}
		if a.Text() != tc.body {
			t.Errorf("%v: %s, want %s", tc.args, a.Text(), tc.body)
		}
	}
}
