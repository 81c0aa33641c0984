package tracer

import (
	"errors"
	"testing"

	"github.com/ktrace-dev/ktrace/bpfcode"
	"github.com/ktrace-dev/ktrace/filter"
	"github.com/ktrace-dev/ktrace/grammar"
	"github.com/ktrace-dev/ktrace/trigger"
)

// The programs count plain fields only: variables, expressions,
// references and handlers are refused (the kernel's parser accepts them,
// ktrace runs none of them).
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
	for _, line := range []string{"hist:keys=aa:vals=aa+1", "hist:keys=aa+1", "hist:keys=aa:m=aa", "hist:keys=aa:m=aa:onmax($m).save(aa)"} {
		l := &trigger.List{}
		if r := l.Write([]byte(line+"\n"), ev); r.Errno != 0 {
			t.Fatalf("%s: %v", line, r.Errno)
		}
		if _, err := histSpec(l.Triggers[0]); !errors.Is(err, bpfcode.ErrHistUnsupported) {
			t.Errorf("%s: %v, want ErrHistUnsupported", line, err)
		}
	}
	l := &trigger.List{}
	if r := l.Write([]byte("hist:keys=aa:vals=aa\n"), ev); r.Errno != 0 {
		t.Fatal(r.Errno)
	}
	if _, err := histSpec(l.Triggers[0]); err != nil {
		t.Errorf("plain hist: %v", err)
	}
}
