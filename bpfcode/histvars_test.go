package bpfcode

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/ktrace-dev/ktrace/filter"
)

// TestHistVarsCompile: a histogram with variables, a reference read once
// to another histogram's variable, a division by a constant and an
// onmatch() trace() action compiles into a program whose jumps all land,
// with the synthetic event's own histogram inline.
func TestHistVarsCompile(t *testing.T) {
	pid := &filter.Field{Name: "pid", Class: filter.Numeric, Offset: 8, Size: 4, Signed: true}
	keys := []HistKey{{Field: pid, Offset: 0, Size: 4}}
	synthHist := &Hist{Map: fakeMap(20), Counts: fakeMap(21), KeySize: 8,
		Keys: []HistKey{{Field: &filter.Field{Name: "lat", Class: filter.Numeric, Offset: 8, Size: 8}, Size: 8}}}
	h := &Hist{
		Map: fakeMap(10), Counts: fakeMap(11), KeySize: 8, Keys: keys,
		Refs: []HistRef{
			{Map: fakeMap(12), Layout: HistLayout{NVars: 1}, Var: 0, ReadOnce: true},
			{Self: true, Var: 0},
		},
		Vars: []*HistExpr{{Op: '-', X: &HistExpr{Timestamp: true, Usecs: true}, Y: &HistExpr{Ref: 1}}},
		Vals: []HistVal{{Expr: &HistExpr{Op: '/', X: &HistExpr{Field: pid}, Y: &HistExpr{IsConst: true, Const: 3}}}},
		Actions: []*HistAction{{
			Params: []*HistExpr{{Ref: 2}, {Field: pid}},
			Target: &SynthTarget{Fields: []SynthField{{Size: 8}, {Size: 4}}, EventID: 1500, Num: 7,
				Ring: fakeMap(13), Scratch: fakeMap(14), Switch: fakeMap(15), Hists: []*Hist{synthHist}},
		}},
	}
	if err := CheckHist(h); err != nil {
		t.Fatal(err)
	}
	p := &TracepointHist{Size: 16, Type: 300, Scratch: fakeMap(4), ScratchSize: HistScratch(16), Hists: []*Hist{h}}
	ins, err := CompileTracepointHist(p)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := ins.Marshal(&buf, binary.LittleEndian); err != nil {
		t.Fatalf("marshal: %v", err)
	}
	c := calls(ins)
	if count(c, "FnRingbufOutput") != 1 {
		t.Errorf("calls %v: want one bpf_ringbuf_output (the synthetic record)", c)
	}

	// A target without maps and parameters that do not match the fields
	// are refused.
	bad := *h
	bad.Actions = []*HistAction{{Params: []*HistExpr{{Ref: 2}}, Target: h.Actions[0].Target}}
	if err := CheckHist(&bad); !errors.Is(err, ErrHistUnsupported) {
		t.Errorf("one parameter for two fields: %v", err)
	}
	bad.Actions = []*HistAction{{Params: h.Actions[0].Params, Target: &SynthTarget{Fields: h.Actions[0].Target.Fields}}}
	if err := CheckHist(&bad); !errors.Is(err, ErrHistUnsupported) {
		t.Errorf("target without maps: %v", err)
	}
}

// TestHistExprKey: a key that is an expression of the record's fields
// (hist:keys=pid*2,pid/3) compiles; one that reads a variable is refused,
// its reference being resolved only after the key is made.
func TestHistExprKey(t *testing.T) {
	pid := &filter.Field{Name: "pid", Class: filter.Numeric, Offset: 8, Size: 4, Signed: true}
	h := &Hist{
		Map: fakeMap(10), Counts: fakeMap(11), KeySize: 16,
		Keys: []HistKey{
			{Offset: 0, Size: 8, Expr: &HistExpr{Op: '*', X: &HistExpr{Field: pid}, Y: &HistExpr{IsConst: true, Const: 2}}},
			{Offset: 8, Size: 8, Expr: &HistExpr{Op: '/', X: &HistExpr{Field: pid}, Y: &HistExpr{IsConst: true, Const: 3}}},
		},
	}
	if err := CheckHist(h); err != nil {
		t.Fatal(err)
	}
	p := &TracepointHist{Size: 16, Type: 300, Scratch: fakeMap(4), ScratchSize: HistScratch(16), Hists: []*Hist{h}}
	ins, err := CompileTracepointHist(p)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := ins.Marshal(&buf, binary.LittleEndian); err != nil {
		t.Fatalf("marshal: %v", err)
	}
	bad := *h
	bad.Refs = []HistRef{{Map: fakeMap(12), Layout: HistLayout{NVars: 1}, Var: 0}}
	bad.Keys = []HistKey{{Offset: 0, Size: 8, Expr: &HistExpr{Op: '+', X: &HistExpr{Field: pid}, Y: &HistExpr{Ref: 1}}}}
	if err := CheckHist(&bad); !errors.Is(err, ErrHistUnsupported) {
		t.Errorf("a key reading a variable: %v", err)
	}
}
