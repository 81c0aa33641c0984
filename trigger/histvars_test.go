package trigger

import (
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/ktrace-dev/ktrace/filter"
	"github.com/ktrace-dev/ktrace/grammar"
	"github.com/ktrace-dev/ktrace/synth"
)

const testFormatG = `name: g
ID: 1555
` + testCommonFields + `
	field:unsigned long __probe_ip;	offset:8;	size:8;	signed:0;
	field:u64 cc;	offset:16;	size:8;	signed:0;

print fmt: "(%lx) cc=%Lu", REC->__probe_ip, REC->cc
`

const testFormatF = `name: f
ID: 1554
` + testCommonFields + `
	field:unsigned long __probe_ip;	offset:8;	size:8;	signed:0;
	field:u64 aa;	offset:16;	size:8;	signed:0;
	field:s32 bb;	offset:24;	size:4;	signed:1;
	field:__data_loc char[] ss;	offset:28;	size:4;	signed:1;

print fmt: "(%lx) aa=%Lu", REC->__probe_ip, REC->aa
`

// world is two kprobe events, kprobes/f (aa u64, bb s32, ss string) and
// kprobes/g (cc u64), and the synthetic event kt_lat (u64 lat; u64 key),
// with the callbacks tracefs gives the parser.
type world struct {
	lists  map[string]*List
	events map[string]*Event
}

func newWorld(t *testing.T) *world {
	t.Helper()
	w := &world{lists: map[string]*List{"f": {}, "g": {}}, events: map[string]*Event{}}
	kt := &synth.Event{Name: "kt_lat", Fields: []synth.Field{{Name: "lat", Type: "u64", Size: 8}, {Name: "key", Type: "u64", Size: 8}}}
	for name, format := range map[string]string{"f": testFormatF, "g": testFormatG} {
		fields, err := filter.FieldsFromFormat(format, true)
		if err != nil {
			t.Fatal(err)
		}
		w.events[name] = &Event{System: "kprobes", Name: name, Fields: fields,
			Env:    &filter.Env{Dialect: grammar.Latest, CPUs: 1},
			Exists: func(s, e string) bool { return s == "kprobes" && (e == "f" || e == "g") },
			Hists: func(s, e string) ([]*Hist, bool) {
				l, ok := w.lists[e]
				if s != "kprobes" || !ok {
					return nil, false
				}
				return l.Hists(), true
			},
			AllHists: func() []EventHists {
				var out []EventHists
				for _, e := range []string{"f", "g"} {
					out = append(out, EventHists{System: "kprobes", Name: e, Hists: w.lists[e].Hists()})
				}
				return out
			},
			Referenced: func(h *Hist) bool {
				for _, l := range w.lists {
					for _, x := range l.Hists() {
						if x.References(h) {
							return true
						}
					}
				}
				return false
			},
			Synthetic: func(n string) *synth.Event {
				if n == kt.Name {
					return kt
				}
				return nil
			},
			SetClock: func(name string) bool { return name == "global" || name == "mono" },
			SnapshotTaken: func() bool {
				for _, l := range w.lists {
					for _, x := range l.Hists() {
						if x.HasSnapshot() {
							return true
						}
					}
				}
				return false
			},
		}
	}
	for _, ev := range w.events {
		ev.ListOf = func(s, e string) (*List, *Event) {
			if s != "kprobes" || w.lists[e] == nil {
				return nil, nil
			}
			return w.lists[e], w.events[e]
		}
	}
	return w
}

// Sequences measured on 6.12 and 6.1 (tools/vmsh with sched events, the
// same rules applied to these kprobes): each write is "EVENT LINE"; the
// last write's errno and last error_log message and caret; then the
// trigger file of event file.
func TestHistVars(t *testing.T) {
	const ts0 = "f hist:keys=aa:ts0=common_timestamp.usecs"
	const lat = "g hist:keys=cc:lat=common_timestamp.usecs-$ts0:onmatch(kprobes.f).trace(kt_lat,$lat,cc)"
	const ts0Line = "f hist:keys=aa:vals=hitcount:ts0=common_timestamp.usecs:sort=hitcount:size=2048:clock=global [active]\n"
	tests := []struct {
		writes []string
		errno  syscall.Errno
		msg    string
		pos    int
		file   string // "EVENT TEXT"
	}{
		{[]string{ts0, lat}, 0, "", 0,
			"g hist:keys=cc:vals=hitcount:lat=common_timestamp.usecs-$ts0:sort=hitcount:size=2048:clock=global:onmatch(kprobes.f).trace(kt_lat,$lat,cc) [active]\n"},
		{[]string{ts0, "g hist:keys=cc:lat=common_timestamp.usecs-$ts0:onmatch(kprobes.f).kt_lat($lat,cc)"}, 0, "", 0,
			"g hist:keys=cc:vals=hitcount:lat=common_timestamp.usecs-$ts0:sort=hitcount:size=2048:clock=global:onmatch(kprobes.f).kt_lat($lat,cc) [active]\n"},
		{[]string{ts0, lat, "f !" + ts0[2:]}, syscall.EBUSY, "", 0, ts0Line},
		{[]string{ts0, lat, "g !" + lat[2:], "f !" + ts0[2:]}, 0, "", 0, "f " + noTriggers},
		{[]string{ts0, "f hist:keys=bb:ts0=aa"}, syscall.EINVAL, histErrDuplicateVar, 13, ts0Line},
		{[]string{ts0, "g hist:keys=cc:ts0=cc", "g hist:keys=cc:z=$ts0"}, syscall.EINVAL, histErrFieldNotFound, 15, ""},
		{[]string{"g hist:keys=cc:x=2*3,y=cc*2,z=-(cc),w=cc/3:vals=hitcount,cc-cc"}, 0, "", 0,
			"g hist:keys=cc:vals=hitcount,cc-cc:x=6,y=cc*2,z=-(cc),w=cc/3:sort=hitcount:size=2048 [active]\n"},
		{[]string{"g hist:keys=cc:x=cc+1:y=$x"}, 0, "", 0, "g hist:keys=cc:vals=hitcount:x=cc+1,y=cc:sort=hitcount:size=2048 [active]\n"},
		{[]string{ts0, "g hist:keys=cc:l=kprobes.f.$ts0,m=$ts0"}, 0, "", 0, "g hist:keys=cc:vals=hitcount:l=$kprobes.f.ts0.usecs,m=$kprobes.f.ts0.usecs:sort=hitcount:size=2048 [active]\n"},
		{[]string{ts0, "g hist:keys=$ts0"}, syscall.EINVAL, histErrInvalidRefKey, 10, ""},
		{[]string{"g hist:keys=cc:x=cc,y"}, syscall.EINVAL, histErrMalformed, 7, ""},
		{[]string{"g hist:keys=cc:x=cc+cc+cc+cc+cc"}, syscall.EINVAL, histErrTooManySubexpr, 10, ""},
		{[]string{ts0, "g hist:keys=cc:x=common_timestamp-$ts0"}, syscall.EINVAL, histErrTimestampMismatch, 0, ""},
		{[]string{"f hist:keys=aa:x=ss+1"}, syscall.EINVAL, histErrInvalidStrOperand, 15, ""},
		{[]string{"g hist:keys=cc:x=cc+1x"}, syscall.EINVAL, histErrExpectNumber, 18, ""},
		{[]string{"g hist:keys=cc:x=-(cc)+1"}, syscall.EINVAL, histErrUnaryMinusSubexpr, 17, ""},
		{[]string{"g hist:keys=cc:x=-cc"}, syscall.EINVAL, "", 0, ""},
		{[]string{"g hist:keys=cc:x=cc/0"}, syscall.EDOM, histErrDivisionByZero, 18, ""},
		{[]string{"g hist:keys=cc:onmatch(kprobes).trace(kt_lat,$ts0,cc)"}, syscall.EINVAL, histErrSubsysNotFound, 21, ""},
		{[]string{"g hist:keys=cc:onmatch(kprobes.nosuch).trace(kt_lat,$ts0,cc)"}, syscall.EINVAL, histErrInvalidSubsysEvent, 29, ""},
		{[]string{"g hist:keys=cc:onmatch(kprobes.f"}, syscall.EINVAL, histErrNoClosingParen, 21, ""},
		{[]string{"g hist:keys=cc:onmatch(kprobes.f).trace"}, syscall.EINVAL, histErrActionNotFound, 0, ""},
		{[]string{"g hist:keys=cc:onmatch(kprobes.f).save(cc)"}, syscall.EINVAL, histErrActionMismatch, 32, ""},
		{[]string{"g hist:keys=cc:onmatch(kprobes.f).trace(nosynth,$ts0,cc)"}, syscall.EINVAL, histErrSynthEventNotFound, 38, ""},
		{[]string{ts0, "g hist:keys=cc:onmatch(kprobes.f).trace(kt_lat,$ts0)"}, syscall.EINVAL, histErrSynthCountMismatch, 38, ""},
		{[]string{ts0, "g hist:keys=cc:onmatch(kprobes.f).trace(kt_lat,$ts0,cc,cc)"}, syscall.EINVAL, histErrSynthTypeMismatch, 10, ""},
		{[]string{"f hist:keys=aa:m=bb:onmax($m).trace(kt_lat,$m,aa)"}, syscall.EINVAL, histErrSynthTypeMismatch, 24, ""},
		{[]string{"g hist:keys=cc:onmatch(kprobes.f).trace(kt_lat,$nosuch,cc)"}, syscall.EINVAL, histErrParamNotFound, 46, ""},
		{[]string{"g hist:keys=cc:onmatch(kprobes.f).trace(kt_lat,$ts0,c)"}, syscall.EINVAL, histErrInvalidParam, 10, ""},
		{[]string{"g hist:keys=cc:onmatch(kprobes.f).trace()"}, syscall.EINVAL, histErrInvalidParam, 0, ""},
		{[]string{"g hist:keys=cc:m=cc:onmax(m).save(cc)"}, syscall.EINVAL, histErrOnxNotVar, 13, ""},
		{[]string{"g hist:keys=cc:m=cc:onmax($n).save(cc)"}, syscall.EINVAL, histErrOnxVarNotFound, 19, ""},
		{[]string{"g hist:keys=cc:m=cc:onmax($m).save(nosuch)"}, syscall.EINVAL, histErrFieldVarCreateFail, 33, ""},
		{[]string{"g hist:keys=cc:m=cc:onmax($m).save(cc):onchange($m).save(cc)"}, syscall.EEXIST, histErrTooManySaveActions, 0, ""},
		{[]string{"g hist:keys=cc:m=cc:onmax($m)junk.saveX(cc,cc"}, 0, "", 0, "g hist:keys=cc:vals=hitcount:m=cc:sort=hitcount:size=2048:onmax($m).saveX(cc,cc) [active]\n"},
		{[]string{"f hist:keys=aa:m=aa:onchange($m).snapshot()", "g hist:keys=cc:m=cc:onmax($m).snapshot()"}, syscall.EBUSY, "", 0, ""},
		// A param that is a field of the matched event only: the kernel
		// makes a histogram with it on that event, logging on the way.
		{[]string{ts0, "g hist:keys=cc:onmatch(kprobes.f).trace(kt_lat,$ts0,aa)"}, 0, histErrFieldVarParseFail, 50,
			ts0Line + "hist:keys=aa:vals=hitcount:synthetic_aa=aa:sort=hitcount:size=2048 [active]\n"},
		{[]string{ts0, "g hist:keys=cc:onmatch(kprobes.f).trace(kt_lat,$ts0,aa)", "g !hist:keys=cc:onmatch(kprobes.f).trace(kt_lat,$ts0,aa)"}, 0, "", 0, ts0Line},
		{[]string{ts0, "g hist:keys=cc:onmatch(kprobes.f).trace(kt_lat,$ts0,nosuch)"}, syscall.EINVAL, histErrHistCreateFail, 50, ""},
		{[]string{"f hist:keys=bb:ts0=common_timestamp.usecs", "g hist:keys=cc:onmatch(kprobes.f).trace(kt_lat,$ts0,aa)"}, syscall.EINVAL, histErrHistNotFound, 50, ""},
		// A trigger's map holds 16 variables, those its actions make
		// included.
		{[]string{"g hist:keys=cc:" + vars(16) + ":onmax($v0).save(cc)"}, syscall.EINVAL, histErrOnxVarCreateFail, 0, ""},
		{[]string{"g hist:keys=cc:" + vars(15) + ":onmax($v0).save(cc)"}, syscall.EINVAL, histErrFieldVarCreateFail, 10, ""},
		{[]string{"g hist:keys=cc:" + vars(14) + ":onmax($v0).save(cc)"}, 0, "", 0, ""},
		{[]string{"g hist:keys=cc:t=common_timestamp:clock=nosuch"}, syscall.EINVAL, histErrSetClock, 38, ""},
		{[]string{"g hist:keys=cc:clock=nosuch"}, 0, "", 0, "g hist:keys=cc:vals=hitcount:sort=hitcount:size=2048 [active]\n"},
		{[]string{"g hist:keys=cc:t=common_timestamp:clock=mono"}, 0, "", 0, "g hist:keys=cc:vals=hitcount:t=common_timestamp:sort=hitcount:size=2048:clock=mono [active]\n"},
	}
	for _, tc := range tests {
		w := newWorld(t)
		var r Result
		for _, wr := range tc.writes {
			evName, line, _ := strings.Cut(wr, " ")
			r = w.lists[evName].Write([]byte(line+"\n"), w.events[evName])
		}
		if r.Errno != tc.errno {
			t.Errorf("%q: errno %v, want %v (logs %+v)", tc.writes, r.Errno, tc.errno, r.Logs)
		}
		switch {
		case tc.msg == "" && len(r.Logs) > 0:
			t.Errorf("%q: logged %+v", tc.writes, r.Logs)
		case tc.msg != "" && (len(r.Logs) == 0 || r.Logs[len(r.Logs)-1].Msg != tc.msg || r.Logs[len(r.Logs)-1].Pos != tc.pos):
			t.Errorf("%q: logs %+v, want %q at %d", tc.writes, r.Logs, tc.msg, tc.pos)
		}
		if tc.file != "" {
			evName, text, _ := strings.Cut(tc.file, " ")
			if got := w.lists[evName].Text(); got != text {
				t.Errorf("%q: %s trigger file %q, want %q", tc.writes, evName, got, text)
			}
		}
	}
}

// vars is "v0=cc,v1=cc,...": n variable definitions.
func vars(n int) string {
	var parts []string
	for i := 0; i < n; i++ {
		parts = append(parts, "v"+strconv.Itoa(i)+"=cc")
	}
	return strings.Join(parts, ",")
}

var noTriggers = "# Available triggers:\n# " + strings.Join(Commands, " ") + "\n"
