package conformance

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestParseErrorLog(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     *LogEntry
	}{
		{"empty", "", nil},
		{"one entry", "[   12.345678] trace_kprobe: error: Unknown type is specified\n" +
			"  Command: p:myev do_sys_openat2 +0(%di):xyz\n" +
			"                                         ^\n",
			&LogEntry{Subsys: "trace_kprobe", Msg: "Unknown type is specified", Cmd: "p:myev do_sys_openat2 +0(%di):xyz", Pos: 30}},
		{"last of two wins", "[    1.000000] trace_kprobe: error: Invalid probed address or symbol\n" +
			"  Command: p:a nosuch\n" +
			"              ^\n" +
			"[    2.000000] trace_fprobe: error: Maxactive is not for fprobe\n" +
			"  Command: f4 vfs_read\n" +
			"           ^\n",
			&LogEntry{Subsys: "trace_fprobe", Msg: "Maxactive is not for fprobe", Cmd: "f4 vfs_read", Pos: 0}},
		{"command looking like a header", "[  100.000001] trace_kprobe: error: Invalid argument\n" +
			"  Command: [ 1.0] x: error: y\n" +
			"           ^\n",
			&LogEntry{Subsys: "trace_kprobe", Msg: "Invalid argument", Cmd: "[ 1.0] x: error: y", Pos: 0}},
		{"caret missing", "[  100.000001] trace_kprobe: error: Invalid argument\n" +
			"  Command: p:a b\n" +
			"\n",
			&LogEntry{Subsys: "trace_kprobe", Msg: "Invalid argument", Cmd: "p:a b", Pos: -1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ParseErrorLog(tc.in); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("ParseErrorLog = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestEventNames(t *testing.T) {
	got := EventNames([]string{
		"p:kprobes/a vfs_read",
		"#  arg1: REG(0) -> END",
		"r16:kprobes/r_vfs_read_0 vfs_read arg1=$retval",
		"p:kprobes/a vfs_write",
		"f:fprobes/vfs_read__entry vfs_read",
		"t:tracepoints/sched_switch sched_switch",
		"garbage",
		"",
	})
	want := []string{"kprobes/a", "kprobes/r_vfs_read_0", "fprobes/vfs_read__entry", "tracepoints/sched_switch"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("EventNames = %q, want %q", got, want)
	}
}

func TestLines(t *testing.T) {
	for in, want := range map[string][]string{
		"":         {},
		"a\n":      {"a"},
		"a\nb\n":   {"a", "b"},
		"a\n\nb":   {"a", "", "b"},
		"a\nb\n\n": {"a", "b", ""},
	} {
		if got := Lines(in); !reflect.DeepEqual(got, want) {
			t.Errorf("Lines(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestFileSelection(t *testing.T) {
	for line, want := range map[string]string{
		"p:a vfs_read": KprobeEvents, "r vfs_read": KprobeEvents, "-:a": KprobeEvents,
		"f vfs_read": DynamicEvents, "t sched_switch": DynamicEvents, " p vfs_read": DynamicEvents,
		"!:a": DynamicEvents, "": DynamicEvents,
	} {
		if got := DefaultFile(line); got != want {
			t.Errorf("DefaultFile(%q) = %s, want %s", line, got, want)
		}
	}
	for _, tc := range []struct{ in, def, file, line string }{
		{"p:a vfs_read", KprobeEvents, KprobeEvents, "p:a vfs_read"},
		{"dynamic_events:f vfs_read", KprobeEvents, DynamicEvents, "f vfs_read"},
		{"kprobe_events:p:a b", DynamicEvents, KprobeEvents, "p:a b"},
		{"f vfs_read", DynamicEvents, DynamicEvents, "f vfs_read"},
	} {
		if f, l := SetupTarget(tc.in, tc.def); f != tc.file || l != tc.line {
			t.Errorf("SetupTarget(%q, %s) = %s, %q; want %s, %q", tc.in, tc.def, f, l, tc.file, tc.line)
		}
	}
}

func TestLoadCases(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("b.jsonl", `{"line":"p:a vfs_read"}`+"\n\n"+
		`{"line":"f vfs_read","kernels":["6.12"]}`+"\n"+
		`{"line":"-:a","setup":["p:a vfs_read"],"enable":["kprobes/a"],"note":"busy"}`+"\n")
	write("a.jsonl", `{"line":"t sched_switch","file":"dynamic_events"}`+"\n")
	write("golden-6.1.jsonl", `{"corpus":"x","index":0}`+"\n")
	got, err := LoadCases(dir, "6.1")
	if err != nil {
		t.Fatal(err)
	}
	want := []Case{
		{Corpus: "a.jsonl", Index: 0, Line: "t sched_switch", Setup: []string{}, File: DynamicEvents},
		{Corpus: "b.jsonl", Index: 0, Line: "p:a vfs_read", Setup: []string{}, File: KprobeEvents},
		{Corpus: "b.jsonl", Index: 2, Line: "-:a", Setup: []string{"p:a vfs_read"}, File: KprobeEvents, Enable: []string{"kprobes/a"}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("LoadCases =\n%+v\nwant\n%+v", got, want)
	}
	write("c.jsonl", `{"line":"p:a b","file":"nosuch_events"}`+"\n")
	if _, err := LoadCases(dir, "6.1"); err == nil {
		t.Error("an unknown file was accepted")
	}
}

func TestCompare(t *testing.T) {
	base := func() *Result {
		return &Result{
			OK: false, Errno: "EINVAL", SetupErrnos: []string{""},
			Error:    &LogEntry{Subsys: "trace_kprobe", Msg: "Unknown type is specified", Cmd: "p:a b +0(%di):xyz", Pos: 14},
			Readback: []string{"p:kprobes/x vfs_read"},
			Formats:  map[string]string{"kprobes/x": "name: x\nID: 1392\nformat:\n"},
		}
	}
	fields := func(ds []Diff) []string {
		var out []string
		for _, d := range ds {
			out = append(out, d.Field)
		}
		return out
	}
	if d := Compare(base(), base()); len(d) != 0 {
		t.Errorf("identical results differ: %+v", d)
	}
	g := base()
	g.Formats["kprobes/x"] = "name: x\nID: 1554\nformat:\n" // IDs are ignored
	if d := Compare(base(), g); len(d) != 0 {
		t.Errorf("results differing only in ID differ: %+v", d)
	}
	g = base()
	g.Error.Pos, g.Error.Msg, g.Errno = 15, "Invalid type", "ENOENT"
	g.Readback = nil
	g.Formats = map[string]string{"kprobes/y": "name: y\n"}
	want := []string{"errno", "msg", "pos", "readback", "formats[kprobes/x]", "formats[kprobes/y]"}
	if got := fields(Compare(base(), g)); !reflect.DeepEqual(got, want) {
		t.Errorf("Compare fields = %q, want %q", got, want)
	}
	g = base()
	g.Error, g.OK, g.SetupErrnos = nil, true, []string{"EEXIST"}
	want = []string{"setup_errnos", "ok", "error"}
	if got := fields(Compare(base(), g)); !reflect.DeepEqual(got, want) {
		t.Errorf("Compare fields = %q, want %q", got, want)
	}
}

func TestCompareWildPos(t *testing.T) {
	mk := func(pos int) *Result {
		return &Result{Errno: "EINVAL", Error: &LogEntry{Subsys: "trace_kprobe", Msg: "m", Cmd: "p:ev vfs_read file->f_flags:string", Pos: pos}}
	}
	for _, tc := range []struct {
		a, b int
		same bool
	}{
		{42638, 17998, true}, // both beyond the command: unstable kernel values
		{35, 36, false},      // 35 = one past the end is a real caret
		{35, 42638, false},
		{14, 14, true},
	} {
		if same := len(Compare(mk(tc.a), mk(tc.b))) == 0; same != tc.same {
			t.Errorf("pos %d vs %d: same=%v, want %v", tc.a, tc.b, same, tc.same)
		}
	}
}

func TestGoldenRoundTrip(t *testing.T) {
	rs := []Result{{
		Corpus: "a.jsonl", Index: 3, Line: "r vfs_read", Setup: []string{}, File: KprobeEvents,
		SetupErrnos: []string{}, OK: true, Readback: []string{"r16:kprobes/r_vfs_read_0 vfs_read"},
		Formats: map[string]string{"kprobes/r_vfs_read_0": "print fmt: \"(%lx <- %lx)\"\n"},
	}}
	p := filepath.Join(t.TempDir(), "golden.jsonl")
	if err := WriteGolden(p, rs); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(p)
	if !strings.Contains(string(b), `(%lx <- %lx)`) {
		t.Errorf("golden escapes HTML characters: %s", b)
	}
	got, err := ReadGolden(p)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, rs) {
		t.Errorf("round trip = %+v, want %+v", got, rs)
	}
}
