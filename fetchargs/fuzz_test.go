package fetchargs

import (
	"strings"
	"testing"

	"github.com/ktrace-dev/ktrace/internal/vmtest"
)

// FuzzArg feeds arbitrary argument lists through PrepareArgs and Parse on
// both pinned kernels and every probe kind, checking that nothing panics
// and that results keep the package's invariants.
func FuzzArg(f *testing.F) {
	f.Add(uint8(0), "%di +0(%si):string $arg*")
	f.Add(uint8(5), "file->f_path.dentry->d_name.name:string")
	f.Fuzz(func(t *testing.T, sel uint8, args string) {
		kname := "6.12"
		if sel&1 != 0 {
			kname = "6.1"
		}
		m := vmtest.Model(t, kname)
		ctx := &Context{Model: m, Dialect: dialectFor(m), Func: "vfs_read"}
		switch (sel >> 1) % 5 {
		case 0:
			ctx.Kind, ctx.Entry = KProbe, true
		case 1:
			ctx.Kind, ctx.Return = KProbe, true
		case 2:
			ctx.Kind, ctx.Func = KProbe, "" // address probe
		case 3:
			ctx.Kind, ctx.Return = FProbe, sel&0x40 != 0
		case 4:
			ctx.Kind, ctx.Func = TProbe, "__probestub_sched_switch"
		}
		argv := append([]string{"p:ev", "vfs_read"}, strings.Fields(args)...)
		toks, err := PrepareArgs(ctx, argv)
		if err != nil {
			checkErr(t, err, len(argv))
			return
		}
		var prev []*Arg
		for i, tok := range toks {
			a, err := Parse(ctx, tok, i, prev)
			if err != nil {
				checkErr(t, err, len(toks)+2)
				return
			}
			if n := len(a.Ops); n == 0 || n > fetchInsnMax || a.Ops[n-1].Code != OpEnd {
				t.Fatalf("%q: bad program %s", tok.Text, ProgramString(a.Ops))
			}
			if a.Type == nil || a.Size <= 0 || !isGoodName(a.Name) {
				t.Fatalf("%q: bad arg %+v", tok.Text, a)
			}
			_ = a.FormatField() + a.PrintFmt() + a.PrintArgs() + a.Text()
			_ = a.ResolveSymbols(m)
			prev = append(prev, a)
		}
	})
}

func checkErr(t *testing.T, err error, maxIndex int) {
	t.Helper()
	entries, errno := Logs(err)
	if errno == 0 {
		t.Fatalf("error without errno: %v", err)
	}
	for _, e := range entries {
		if e.Arg < 2 || e.Arg > maxIndex+maxTraceArgs || e.Off < UnpredictableOffset {
			t.Fatalf("bad log entry %+v", e)
		}
	}
}
