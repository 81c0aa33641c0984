package check

import (
	"strings"
	"testing"

	"github.com/ktrace-dev/ktrace/grammar"
	"github.com/ktrace-dev/ktrace/hints"
	"github.com/ktrace-dev/ktrace/internal/vmtest"
	"github.com/ktrace-dev/ktrace/kernel"
)

// hintCases holds, for every error code that has a hint, a line the
// embedded 6.12.95 model rejects with that code (as 6.12.95 does) and
// what its hint must say. The facts the hints state are the kernel's:
// do_sys_openat2, s32, %di, $retval, filename (const char *) and
// open_how's flags (__u64) exist; do_int3 is in the kprobe blacklist;
// __schedule is not in available_filter_functions; active_show names two
// functions; schedule returns void.
var hintCases = map[grammar.Code]struct{ line, want string }{
	grammar.ErrBadProbeAddr:   {"p:x do_sys_opnat2", "did you mean do_sys_openat2?"},
	grammar.ErrBadRetprobe:    {"r:x vfs_read+8", "a return probe goes on a function's entry: r vfs_read"},
	grammar.ErrNoBTFEntry:     {"p:x ZSTD_BtFindBestMatch_extDict_4.constprop.0 ms", "compiler clones"},
	grammar.ErrBadType:        {"p:x vfs_read %di:int32", "did you mean s32?"},
	grammar.ErrBadType4Str:    {"p:x vfs_read file:string", "file is struct file *: a string type needs a char pointer or array"},
	grammar.ErrBadString:      {"p:x vfs_read %si:string", "string, ustring and symstr read memory"},
	grammar.ErrBadRegName:     {"p:x vfs_read %rdi", "did you mean %di?"},
	grammar.ErrBadVar:         {"p:x vfs_read $retvl", "did you mean $retval?"},
	grammar.ErrNoBTFArg:       {"p:x do_sys_openat2 filenam", "did you mean filename (const char *)?"},
	grammar.ErrNoBTFField:     {"p:x do_sys_openat2 how->flagz", "struct open_how has no member flagz; did you mean flags (__u64)?"},
	grammar.ErrNoPtrStrct:     {"p:x do_sys_openat2 how->flags->x", "how->flags is __u64, not a pointer to a struct or union"},
	grammar.ErrBadBTFTid:      {"p:x do_sys_openat2 filename->name", "filename is const char *, not a pointer to a struct or union"},
	grammar.ErrFailRegProbe:   {"p:x do_int3", "do_int3 is blacklisted"},
	grammar.ErrNonUniqSymbol:  {"p:x active_show", "2 symbols are named active_show"},
	grammar.ErrNoRetval:       {"r:x schedule $retval", "schedule returns void"},
	grammar.ErrRetvalOnProbe:  {"p:x vfs_read $retval", "$retval is read on return: r vfs_read"},
	grammar.ErrNeedStringType: {"p:x vfs_read $comm:u32", "$comm and \"immediate\" strings take only a string type"},
}

func embedded(t testing.TB) (*kernel.Model, *grammar.Dialect) {
	t.Helper()
	m, err := kernel.Embedded()
	if err != nil {
		t.Fatal(err)
	}
	major, minor, _ := m.KernelVersion()
	return m, grammar.DialectFor(major, minor)
}

// TestHintEveryCode checks the hint of every code in the hint table: the
// line is rejected with that code, the kernel's text is as without hints,
// and the hint says what it should.
func TestHintEveryCode(t *testing.T) {
	m, d := embedded(t)
	h := &hints.Hinter{Model: m, Dialect: d}
	for _, c := range grammar.HintCodes() {
		tc, ok := hintCases[c]
		if !ok {
			t.Errorf("%s has a hint but no test case", c.Name())
			continue
		}
		r := New(m, d, false).Check(tc.line, DefaultFile(tc.line))
		if r.OK || r.Error == nil {
			t.Errorf("%s: %q: accepted or not logged: %+v", c.Name(), tc.line, r)
			continue
		}
		if got, _ := h.CodeOf(r.Error.Msg); got != c {
			t.Errorf("%q: logged %s (%q), want %s", tc.line, got.Name(), r.Error.Msg, c.Name())
		}
		if len(r.Hints) != 1 || !strings.Contains(r.Hints[0], tc.want) {
			t.Errorf("%s: %q: hints %q, want one containing %q", c.Name(), tc.line, r.Hints, tc.want)
		}
	}
	for c := range hintCases {
		if c.Hint() == grammar.HintNone {
			t.Errorf("test case for %s, which has no hint", c.Name())
		}
	}
}

// TestHintsKeepKernelText checks that hints change nothing of what the
// kernel reports.
func TestHintsKeepKernelText(t *testing.T) {
	m, d := embedded(t)
	r := New(m, d, false).Check("p:x do_sys_opnat2", DefaultFile("p:x"))
	if r.Error == nil || r.Error.Msg != "Invalid probed address or symbol" || r.Error.Pos != 4 || r.Error.Cmd != "p:x do_sys_opnat2" || *r.Errno != "EINVAL" {
		t.Errorf("kernel text changed: %+v", r.Error)
	}
}

// TestNeedsHint6_1 checks the release hint on the 6.1.192 snapshot,
// whose kernel logs nothing for an f line.
func TestNeedsHint6_1(t *testing.T) {
	m := vmtest.Model(t, "6.1")
	r := New(m, grammar.DialectFor(6, 1), false).Check("f:x vfs_read", DefaultFile("f:x"))
	if r.OK || r.Error != nil {
		t.Fatalf("f line on 6.1: %+v", r)
	}
	if len(r.Hints) != 1 || !strings.Contains(r.Hints[0], "needs fprobe events") || !strings.Contains(r.Hints[0], "--syntax latest") {
		t.Errorf("hints %q", r.Hints)
	}
}

// An event probe's unknown $-variable is hinted with the attached event's
// fields, not the kprobe variables.
func TestHintEventField(t *testing.T) {
	m, d := embedded(t)
	for line, want := range map[string]string{
		`e:ep/x sched.sched_switch x=+0($prev_pd)`: "sched.sched_switch has no field prev_pd; did you mean $prev_pid?",
		`e:ep/x sched/sched_switch $zzzzzzzz`:      "its fields are $prev_comm, $prev_pid, $prev_prio, $prev_state, $next_comm, $next_pid, $next_prio, $comm",
	} {
		r := New(m, d, false).Check(line, DefaultFile(line))
		if len(r.Hints) != 1 || !strings.Contains(r.Hints[0], want) {
			t.Errorf("%q: hints %q, want one containing %q", line, r.Hints, want)
		}
	}
}
