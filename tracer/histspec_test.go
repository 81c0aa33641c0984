package tracer

import (
	"errors"
	"testing"

	"github.com/ktrace-dev/ktrace/bpfcode"
	"github.com/ktrace-dev/ktrace/filter"
	"github.com/ktrace-dev/ktrace/grammar"
	"github.com/ktrace-dev/ktrace/trigger"
)

// What the programs cannot count is refused (a variable of the
// execname, here); fields, expressions (keys too), variables and
// handlers are taken.
func TestHistSpecRefuses(t *testing.T) {
	const format = `name: f
ID: 1
format:
	field:unsigned short common_type;	offset:0;	size:2;	signed:0;
	field:unsigned char common_flags;	offset:2;	size:1;	signed:0;
	field:unsigned char common_preempt_count;	offset:3;	size:1;	signed:0;
	field:int common_pid;	offset:4;	size:4;	signed:1;

	field:u64 aa;	offset:8;	size:8;	signed:0;

print fmt: "aa=%Lu", REC->aa
`
	fields, err := filter.FieldsFromFormat(format, true)
	if err != nil {
		t.Fatal(err)
	}
	ev := &trigger.Event{System: "kprobes", Name: "f", Fields: fields, Env: &filter.Env{Dialect: grammar.Latest, CPUs: 1}}
	for _, line := range []string{"hist:keys=aa:m=common_pid.execname"} {
		l := &trigger.List{}
		if r := l.Write([]byte(line+"\n"), ev); r.Errno != 0 {
			t.Fatalf("%s: %v", line, r.Errno)
		}
		if _, _, err := histSpec(l.Triggers[0], nil); !errors.Is(err, bpfcode.ErrHistUnsupported) {
			t.Errorf("%s: %v, want ErrHistUnsupported", line, err)
		}
	}
	for _, line := range []string{"hist:keys=aa:vals=aa", "hist:keys=aa:vals=aa+1", "hist:keys=aa+1", "hist:keys=aa*2,aa/3:vals=aa", "hist:keys=aa:vals=common_cpu,cpu", "hist:keys=aa:x=common_cpu:vals=$x", "hist:keys=aa:m=aa", "hist:keys=aa:m=aa*2-aa/3,t=common_timestamp.usecs", "hist:keys=aa:m=aa:onmax($m).save(aa)", "hist:keys=aa:m=aa:onchange($m).save(aa,common_pid)"} {
		l := &trigger.List{}
		if r := l.Write([]byte(line+"\n"), ev); r.Errno != 0 {
			t.Fatalf("%s: %v", line, r.Errno)
		}
		if _, _, err := histSpec(l.Triggers[0], nil); err != nil {
			t.Errorf("%s: %v", line, err)
		}
	}
}

// TestHistSpecVars: variables and expressions become the hist stage's
// expression trees, references to another trigger's variables its
// references, read once when they are an operand.
func TestHistSpecVars(t *testing.T) {
	const format = `name: f
ID: 1000
format:
	field:unsigned short common_type;	offset:0;	size:2;	signed:0;
	field:unsigned char common_flags;	offset:2;	size:1;	signed:0;
	field:unsigned char common_preempt_count;	offset:3;	size:1;	signed:0;
	field:int common_pid;	offset:4;	size:4;	signed:1;

	field:unsigned long __probe_ip;	offset:8;	size:8;	signed:0;
	field:s32 aa;	offset:16;	size:4;	signed:1;

print fmt: "aa=%d", REC->aa
`
	fields, err := filter.FieldsFromFormat(format, true)
	if err != nil {
		t.Fatal(err)
	}
	env := &filter.Env{Dialect: grammar.Latest, CPUs: 1}
	a := &trigger.Event{System: "kprobes", Name: "a", Fields: fields, Env: env}
	la := &trigger.List{}
	if r := la.Write([]byte("hist:keys=aa:t0=common_timestamp.usecs,v=aa*2-aa/3\n"), a); r.Errno != 0 {
		t.Fatal(r.Errno)
	}
	specA, _, err := histSpec(la.Triggers[0], nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(specA.Vars) != 2 || !specA.Vars[0].Timestamp || !specA.Vars[0].Usecs {
		t.Fatalf("vars of A: %+v", specA.Vars)
	}
	v := specA.Vars[1]
	if v.Op != '-' || v.X.Op != '*' || v.X.X.Field == nil || !v.X.Y.IsConst || v.X.Y.Const != 2 || v.Y.Op != '/' || v.Y.Y.Const != 3 {
		t.Fatalf("v=aa*2-aa/3 became %+v", v)
	}
	ha := &Hist{Spec: specA}
	specA.KeySize = 8
	b := &trigger.Event{System: "kprobes", Name: "b", Fields: fields, Env: env,
		Exists: func(system, event string) bool { return system == "kprobes" && (event == "a" || event == "b") },
		Hists: func(system, event string) ([]*trigger.Hist, bool) {
			if system == "kprobes" && event == "a" {
				return la.Hists(), true
			}
			return nil, system == "kprobes" && event == "b"
		},
		AllHists: func() []trigger.EventHists {
			return []trigger.EventHists{{System: "kprobes", Name: "a", Hists: la.Hists()}}
		},
	}
	lb := &trigger.List{}
	if r := lb.Write([]byte("hist:keys=aa:d=common_timestamp.usecs-$t0:vals=$v\n"), b); r.Errno != 0 {
		t.Fatal(r.Errno)
	}
	specB, _, err := histSpec(lb.Triggers[0], func(o *trigger.Hist) *Hist {
		if o == la.Triggers[0].Hist {
			return ha
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(specB.Refs) != 2 {
		t.Fatalf("refs of B: %+v", specB.Refs)
	}
	byVar := map[int]bpfcode.HistRef{}
	for _, r := range specB.Refs {
		if r.Self || r.Layout.NVars != 2 {
			t.Errorf("ref %+v: want one to A, whose entries hold 2 variables", r)
		}
		byVar[r.Var] = r
	}
	if !byVar[0].ReadOnce || byVar[1].ReadOnce {
		t.Errorf("$t0 (an operand) must be read once, $v (a value) not: %+v", specB.Refs)
	}
	if d := specB.Vars[0]; d.Op != '-' || !d.X.Timestamp || d.Y.Ref == 0 || specB.Refs[d.Y.Ref-1].Var != 0 {
		t.Errorf("d became %+v", d)
	}
	if e := specB.Vals[0].Expr; e == nil || e.Ref == 0 || specB.Refs[e.Ref-1].Var != 1 {
		t.Errorf("vals=$v became %+v", specB.Vals[0])
	}
}
