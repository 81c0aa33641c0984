package conformance

import (
	"context"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/ktrace-dev/ktrace/internal/vmtest"
)

// TestRunnerSmokeVM checks the guest runner end to end on every pinned
// kernel with a few cases whose outcome follows from the kernel's rules.
func TestRunnerSmokeVM(t *testing.T) {
	vmtest.Require(t)
	ks, err := vmtest.PinnedKernels()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	runner, err := vmtest.BuildStatic(ctx, runnerPkg)
	if err != nil {
		t.Fatal(err)
	}
	// Expectations derived by hand from the kernel's rules (reference
	// §4, §10, §11): caret = Σ(len(argv[j])+1) + offset in the token.
	type want struct {
		errno    string
		msg      string
		pos      int
		readback []string
		formats  []string
	}
	cases := []struct {
		c    Case
		want map[string]want // by kernel name; "" = every kernel
	}{
		{Case{Line: "p:myev do_sys_openat2 dfd=%di:s32 path=+0(%si):string", File: KprobeEvents},
			map[string]want{"": {readback: []string{"p:kprobes/myev do_sys_openat2 dfd=%di:s32 path=+0(%si):string"}, formats: []string{"kprobes/myev"}}}},
		// A missing symbol: register_kprobe's -ENOENT passes through on 6.1;
		// 6.12 rejects it earlier with -EINVAL. Same message and caret (argv[1]).
		{Case{Line: "p:myev nosuchfunc_xyz", File: KprobeEvents}, map[string]want{
			"6.1":  {errno: "ENOENT", msg: "Invalid probed address or symbol", pos: 7},
			"6.12": {errno: "EINVAL", msg: "Invalid probed address or symbol", pos: 7}}},
		{Case{Line: "r16 vfs_read $retval", File: KprobeEvents},
			map[string]want{"": {readback: []string{"r16:kprobes/r_vfs_read_0 vfs_read arg1=$retval"}, formats: []string{"kprobes/r_vfs_read_0"}}}},
		// Multi-probe append; setup lines may target the other file.
		{Case{Line: "p:ev2 vfs_read", Setup: []string{"p:ev2 vfs_write", "dynamic_events:p:ev3 vfs_read"}, File: KprobeEvents},
			map[string]want{"": {readback: []string{"p:kprobes/ev2 vfs_write", "p:kprobes/ev3 vfs_read", "p:kprobes/ev2 vfs_read"}, formats: []string{"kprobes/ev2", "kprobes/ev3"}}}},
		// Removing an enabled event: EBUSY, nothing in error_log.
		{Case{Line: "-:ev2", Setup: []string{"p:ev2 vfs_write"}, Enable: []string{"kprobes/ev2"}, File: KprobeEvents},
			map[string]want{"": {errno: "EBUSY", readback: []string{"p:kprobes/ev2 vfs_write"}, formats: []string{"kprobes/ev2"}}}},
		// fprobe events exist on 6.12 only; on 6.1 no parser accepts the line.
		{Case{Line: "f vfs_read", File: DynamicEvents}, map[string]want{
			"6.1":  {errno: "EINVAL"},
			"6.12": {readback: []string{"f:fprobes/vfs_read__entry vfs_read"}, formats: []string{"fprobes/vfs_read__entry"}}}},
		// Bad type: caret at the first byte after ':' (22 + 8).
		{Case{Line: "p:myev do_sys_openat2 +0(%di):xyz", File: KprobeEvents},
			map[string]want{"": {errno: "EINVAL", msg: "Unknown type is specified", pos: 30}}},
	}
	var in []Case
	for i, tc := range cases {
		c := tc.c
		c.Corpus, c.Index = "smoke", i
		if c.Setup == nil {
			c.Setup = []string{}
		}
		in = append(in, c)
	}
	for _, k := range ks {
		var st vmtest.Stats
		rs, _, err := runVM(ctx, k, runner, in, nil, &st)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: boot %v, script %v, wall %v", k.Name, st.Boot, st.Script, st.Wall)
		for i, tc := range cases {
			w, ok := tc.want[k.Name]
			if !ok {
				w = tc.want[""]
			}
			r := &rs[i]
			wantErr := (*LogEntry)(nil)
			if w.msg != "" {
				wantErr = &LogEntry{Subsys: "trace_kprobe", Msg: w.msg, Cmd: tc.c.Line, Pos: w.pos}
			}
			if r.Errno != w.errno || r.OK != (w.errno == "") || fmtLog(r.Error) != fmtLog(wantErr) {
				t.Errorf("%s %q: ok=%v errno=%q error=%s; want errno=%q error=%s", k.Name, tc.c.Line, r.OK, r.Errno, fmtLog(r.Error), w.errno, fmtLog(wantErr))
			}
			if w.readback == nil {
				w.readback = []string{}
			}
			if strings.Join(r.Readback, "\n") != strings.Join(w.readback, "\n") {
				t.Errorf("%s %q: readback %q, want %q", k.Name, tc.c.Line, r.Readback, w.readback)
			}
			var evs []string
			for ev := range r.Formats {
				evs = append(evs, ev)
			}
			sort.Strings(evs)
			if strings.Join(evs, ",") != strings.Join(w.formats, ",") {
				t.Errorf("%s %q: format files for %q, want %q", k.Name, tc.c.Line, evs, w.formats)
			}
			if len(r.Problems) > 0 {
				t.Errorf("%s %q: runner problems %q", k.Name, tc.c.Line, r.Problems)
			}
		}
	}
}
