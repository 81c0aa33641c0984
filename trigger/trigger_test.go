package trigger

import (
	"strings"
	"syscall"
	"testing"

	"github.com/ktrace-dev/ktrace/filter"
	"github.com/ktrace-dev/ktrace/grammar"
)

// testCommonFields is a format file's common fields.
const testCommonFields = `format:
	field:unsigned short common_type;	offset:0;	size:2;	signed:0;
	field:unsigned char common_flags;	offset:2;	size:1;	signed:0;
	field:unsigned char common_preempt_count;	offset:3;	size:1;	signed:0;
	field:int common_pid;	offset:4;	size:4;	signed:1;
`

const testFormat = `name: f
ID: 1554
` + testCommonFields + `
	field:unsigned long __probe_ip;	offset:8;	size:8;	signed:0;
	field:u64 a;	offset:16;	size:8;	signed:0;
	field:s32 b;	offset:24;	size:4;	signed:1;
	field:__data_loc char[] s;	offset:28;	size:4;	signed:1;

print fmt: "(%lx) a=%Lu", REC->__probe_ip, REC->a
`

func testEvent(t *testing.T) *Event {
	t.Helper()
	ev, err := filter.FieldsFromFormat(testFormat, true)
	if err != nil {
		t.Fatal(err)
	}
	return &Event{System: "kprobes", Name: "f", Fields: ev,
		Env:    &filter.Env{Dialect: grammar.Latest, CPUs: 1},
		Exists: func(s, e string) bool { return s == "kprobes" && (e == "f" || e == "g") }}
}

// Sequences seen on 6.12 (tools/vmsh and the conformance goldens): each
// write's errno, then the trigger file.
func TestWrites(t *testing.T) {
	tests := []struct {
		writes []string
		errnos []syscall.Errno
		file   string
	}{
		{[]string{"traceon"}, []syscall.Errno{0}, "traceon:unlimited\n"},
		{[]string{"traceon:5"}, []syscall.Errno{0}, "traceon:count=5\n"},
		{[]string{"traceon:3 if a == 1"}, []syscall.Errno{0}, "traceon:count=3 if a == 1\n"},
		{[]string{"traceon", "traceoff"}, []syscall.Errno{0, syscall.EEXIST}, "traceon:unlimited\n"},
		{[]string{"traceon", "stacktrace"}, []syscall.Errno{0, 0}, "stacktrace:unlimited\ntraceon:unlimited\n"},
		{[]string{"traceon:2", "!traceoff"}, []syscall.Errno{0, 0}, "# Available triggers:\n# " + strings.Join(Commands, " ") + "\n"},
		{[]string{"traceon:abc"}, []syscall.Errno{syscall.EINVAL}, "# Available triggers:\n# " + strings.Join(Commands, " ") + "\n"},
		{[]string{"enable_event:kprobes:g:3", "disable_event:kprobes:g"}, []syscall.Errno{0, syscall.EEXIST}, "enable_event:kprobes:g:count=3\n"},
		{[]string{"enable_event:kprobes:nosuch"}, []syscall.Errno{syscall.EINVAL}, "# Available triggers:\n# " + strings.Join(Commands, " ") + "\n"},
		{[]string{"hist:keys=a", "traceon"}, []syscall.Errno{0, 0}, "traceon:unlimited\nhist:keys=a:vals=hitcount:sort=hitcount:size=2048 [active]\n"},
		{[]string{"hist:keys=a:vals=b:sort=b.descending:size=100"}, []syscall.Errno{0}, "hist:keys=a:vals=hitcount,b:sort=b.descending:size=128 [active]\n"},
		{[]string{"hist:keys=a", "hist:keys=a:size=4096"}, []syscall.Errno{0, syscall.EEXIST}, "hist:keys=a:vals=hitcount:sort=hitcount:size=2048 [active]\n"},
		{[]string{"hist:keys=a", "hist:keys=a:pause"}, []syscall.Errno{0, 0}, "hist:keys=a:vals=hitcount:sort=hitcount:size=2048 [paused]\n"},
	}
	for _, tc := range tests {
		l := &List{}
		ev := testEvent(t)
		for i, w := range tc.writes {
			if r := l.Write([]byte(w+"\n"), ev); r.Errno != tc.errnos[i] {
				t.Errorf("%q: write %q: %v, want %v", tc.writes, w, r.Errno, tc.errnos[i])
			}
		}
		if got := l.Text(); got != tc.file {
			t.Errorf("%q: trigger file %q, want %q", tc.writes, got, tc.file)
		}
	}
}

// String keys take their field's size when it is a static char[N], 256
// bytes otherwise: two char[16] keys and a number fit in the 384-byte
// key, two dynamic strings do not (EINVAL, no log), on 6.1 and 6.12
// (tools/vmsh, sched_process_fork and a kprobe's :string arguments).
func TestStringKeySizes(t *testing.T) {
	const format = `name: f
ID: 1554
` + testCommonFields + `
	field:char c1[16];	offset:8;	size:16;	signed:0;
	field:char c2[16];	offset:24;	size:16;	signed:0;
	field:__data_loc char[] s1;	offset:40;	size:4;	signed:1;
	field:__data_loc char[] s2;	offset:44;	size:4;	signed:1;

print fmt: "%s", REC->c1
`
	fields, err := filter.FieldsFromFormat(format, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		keys  string
		errno syscall.Errno
		size  int
	}{
		{"c1,c2", 0, 32},
		{"c1,c2,common_pid", 0, 40},
		{"s1,common_pid", 0, 264},
		{"s1,c1", 0, 272},
		{"s1,s2", syscall.EINVAL, 0},
	} {
		ev := &Event{System: "sched", Name: "f", Fields: fields, Env: &filter.Env{Dialect: grammar.Latest, CPUs: 1}}
		l := &List{}
		r := l.Write([]byte("hist:keys="+tc.keys+"\n"), ev)
		if r.Errno != tc.errno || len(r.Logs) != 0 {
			t.Errorf("keys=%s: %v %+v, want %v and no log", tc.keys, r.Errno, r.Logs, tc.errno)
			continue
		}
		if tc.errno != 0 {
			continue
		}
		if _, size := l.Triggers[0].Hist.KeyLayout(); size != tc.size {
			t.Errorf("keys=%s: key of %d bytes, want %d", tc.keys, size, tc.size)
		}
	}
}

func TestHistErrors(t *testing.T) {
	l := &List{}
	r := l.Write([]byte("hist:keys=nosuch\n"), testEvent(t))
	if r.Errno != syscall.EINVAL || len(r.Logs) != 1 {
		t.Fatalf("%+v", r)
	}
	if e := r.Logs[0]; e.Subsys != "hist:kprobes:f" || e.Msg != "Couldn't find field" || e.Cmd != "hist:keys=nosuch" || e.Pos != 10 {
		t.Errorf("log %+v", e)
	}
	if got, want := (&List{Triggers: []*Trigger{{Cmd: "hist", Count: -1, Hist: &Hist{Bits: 11, Keys: []*HistField{{Name: "a"}}, sorts: []sortKey{{}}}}}}).HistText(nil, nil, SortClassic),
		"# event histogram\n#\n# trigger info: hist:keys=a:vals=hitcount:sort=hitcount:size=2048 [active]\n#\n\n\nTotals:\n    Hits: 0\n    Entries: 0\n    Dropped: 0\n"; got != want {
		t.Errorf("hist file %q, want %q", got, want)
	}
}

// ClearHist (an O_TRUNC open) removes the hist triggers and the
// enable_hist/disable_hist ones, keeps the rest; a referenced hist
// trigger keeps every hist trigger, not the enable_hist ones (6.1 and
// 6.12, tools/vmsh).
func TestClearHist(t *testing.T) {
	for _, referenced := range []bool{false, true} {
		l := &List{}
		ev := testEvent(t)
		for _, w := range []string{"hist:keys=a", "traceon", "enable_hist:kprobes:g", "disable_hist:kprobes:f"} {
			if r := l.Write([]byte(w+"\n"), ev); r.Errno != 0 {
				t.Fatalf("write %q: %v", w, r.Errno)
			}
		}
		removed := l.ClearHist(func(*Hist) bool { return referenced })
		want := "traceon:unlimited\n"
		if referenced {
			want += "hist:keys=a:vals=hitcount:sort=hitcount:size=2048 [active]\n"
		}
		if got := l.Text(); got != want {
			t.Errorf("referenced %v: trigger file %q, want %q", referenced, got, want)
		}
		if n := len(removed); n != map[bool]int{false: 1, true: 0}[referenced] {
			t.Errorf("referenced %v: %d hist triggers removed", referenced, n)
		}
	}
}
