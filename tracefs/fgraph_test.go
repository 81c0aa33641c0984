package tracefs

import (
	"strings"
	"testing"
)

// graphSession is the records behind the 6.1 guest's function_graph
// trace of dd reading /proc/self/stat (set_ftrace_filter "ksys_read
// vfs_read rw_verify_area"), the times as the trace showed them.
func graphSession() []GraphRecord {
	dd, sh := 93, 84
	ent := func(us uint64, pid, depth int, fn string) GraphRecord {
		c := "dd"
		if pid == sh {
			c = "sh"
		}
		return GraphRecord{CPU: 0, Pid: pid, Comm: c, Func: fn, Depth: depth, TS: 2184627000 + us*1000}
	}
	// ret is a return at us with a duration of d ns (its entry's time
	// is taken before the entry's record is written).
	ret := func(us, d uint64, pid, depth int, fn string) GraphRecord {
		r := ent(us, pid, depth, fn)
		r.Return, r.CallTime = true, r.TS-d
		return r
	}
	return []GraphRecord{
		ent(0, dd, 0, "ksys_read"),
		ent(339, dd, 1, "vfs_read"),
		ent(365, dd, 2, "rw_verify_area"),
		ret(407, 41292, dd, 2, "rw_verify_area"),
		ret(1578, 1238975, dd, 1, "vfs_read"),
		ret(1580, 1839975, dd, 0, "ksys_read"),
		ent(1635, dd, 0, "rw_verify_area"),
		ret(1639, 3185, dd, 0, "rw_verify_area"),
		ent(1669, dd, 0, "ksys_read"),
		ent(1670, dd, 1, "vfs_read"),
		ent(1671, dd, 2, "rw_verify_area"),
		ret(1673, 1342, dd, 2, "rw_verify_area"),
		ret(1702, 31366, dd, 1, "vfs_read"),
		ret(1704, 33821, dd, 0, "ksys_read"),
		ent(1710, dd, 0, "rw_verify_area"),
		ret(1712, 1543, dd, 0, "rw_verify_area"),
		ent(1720, dd, 0, "rw_verify_area"),
		ret(1727, 6770, dd, 0, "rw_verify_area"),
		ent(1800, sh, 0, "rw_verify_area"),
		ret(1812, 11036, sh, 0, "rw_verify_area"),
	}
}

// TestGraphTrace: the trace file under function_graph, with the default
// options and with the option changes made in the guest after the run,
// is what the kernel printed from the same records (6.1 guest, one CPU).
func TestGraphTrace(t *testing.T) {
	f := New(nil, Options{CPUs: 1, Major: 6, Minor: 1})
	f.mu.Lock()
	f.tracer = tracerGraph
	f.mu.Unlock()
	for _, r := range graphSession() {
		if !f.RecordGraph(r) {
			t.Fatal("a graph record was not recorded")
		}
	}
	set := func(name string, on bool) {
		i, ok := f.option(name)
		if !ok {
			t.Fatalf("no option %s", name)
		}
		f.mu.Lock()
		f.optOn[i] = on
		f.mu.Unlock()
	}
	for _, c := range []struct {
		name string
		opts map[string]bool
		want string
	}{
		{"defaults", nil, `# tracer: function_graph
#
# CPU  DURATION                  FUNCTION CALLS
# |     |   |                     |   |   |   |
 0)               |  ksys_read() {
 0)               |    vfs_read() {
 0) + 41.292 us   |      rw_verify_area();
 0) # 1238.975 us |    }
 0) # 1839.975 us |  }
 0)   3.185 us    |  rw_verify_area();
 0)               |  ksys_read() {
 0)               |    vfs_read() {
 0)   1.342 us    |      rw_verify_area();
 0) + 31.366 us   |    }
 0) + 33.821 us   |  }
 0)   1.543 us    |  rw_verify_area();
 0)   6.770 us    |  rw_verify_area();
 ------------------------------------------
 0)     dd-93      =>     sh-84     
 ------------------------------------------

 0) + 11.036 us   |  rw_verify_area();
`},
		{"abstime proc tail", map[string]bool{"funcgraph-abstime": true, "funcgraph-proc": true, "funcgraph-tail": true}, `# tracer: function_graph
#
#     TIME        CPU  TASK/PID         DURATION                  FUNCTION CALLS
#      |          |     |    |           |   |                     |   |   |   |
    2.184627 |   0)     dd-93      |               |  ksys_read() {
    2.184966 |   0)     dd-93      |               |    vfs_read() {
    2.184992 |   0)     dd-93      | + 41.292 us   |      rw_verify_area();
    2.186205 |   0)     dd-93      | # 1238.975 us |    } /* vfs_read */
    2.186207 |   0)     dd-93      | # 1839.975 us |  } /* ksys_read */
    2.186262 |   0)     dd-93      |   3.185 us    |  rw_verify_area();
    2.186296 |   0)     dd-93      |               |  ksys_read() {
    2.186297 |   0)     dd-93      |               |    vfs_read() {
`},
		{"no cpu, no duration", map[string]bool{"funcgraph-cpu": false, "funcgraph-duration": false}, `# tracer: function_graph
#
#               FUNCTION CALLS
#               |   |   |   |
ksys_read() {
  vfs_read() {
    rw_verify_area();
  }
`},
		{"no overhead", map[string]bool{"funcgraph-overhead": false}, `# tracer: function_graph
#
# CPU  DURATION                  FUNCTION CALLS
# |     |   |                     |   |   |   |
 0)               |  ksys_read() {
 0)               |    vfs_read() {
 0)   41.292 us   |      rw_verify_area();
 0)   1238.975 us |    }
`},
	} {
		for name, on := range c.opts {
			set(name, on)
		}
		got := f.traceText()
		if !strings.HasPrefix(got, c.want) {
			t.Errorf("%s:\ngot:\n%s\nwant (a prefix):\n%s", c.name, got, c.want)
		}
		for name, on := range c.opts {
			set(name, !on)
		}
	}
}

// TestGraphDuration: the duration column's number as
// trace_print_graph_duration prints it, and its mark.
func TestGraphDuration(t *testing.T) {
	for _, c := range []struct {
		ns   uint64
		want string
	}{
		{1342, "  1.342 us    |  "},
		{67541, "+ 67.541 us   |  "},
		{1659904, "# 1659.904 us |  "},
		{300564512, "@ 300564.5 us |  "},
		{12345678901, "$ 12345678 us |  "},
	} {
		g := newGraphPrinter(graphFlags{duration: true, overhead: true, context: true}, 1, nil)
		var b strings.Builder
		g.duration(&b, c.ns, graphFillNone)
		if b.String() != c.want {
			t.Errorf("%d ns: %q, want %q", c.ns, b.String(), c.want)
		}
	}
}

// TestGraphComment: another event's entry under the graph tracer prints
// as the 6.12 guest printed a kprobe event's hit inside vfs_read (with
// funcgraph-proc).
func TestGraphComment(t *testing.T) {
	f := New(nil, Options{CPUs: 1, Major: 6, Minor: 12})
	f.mu.Lock()
	f.tracer = tracerGraph
	f.mu.Unlock()
	if i, ok := f.option("funcgraph-proc"); ok {
		f.optOn[i] = true
	}
	base := uint64(2000000000)
	f.RecordGraph(GraphRecord{Pid: 136, Comm: "dd", Func: "ksys_read", TS: base})
	f.RecordGraph(GraphRecord{Pid: 136, Comm: "dd", Func: "vfs_read", Depth: 1, TS: base + 1000})
	f.RecordTask(base+2000, 136, "dd", []byte(" [000] .....     2.000002: rv: (rw_verify_area+0x4/0x130)"))
	f.RecordGraph(GraphRecord{Return: true, Pid: 136, Comm: "dd", Func: "vfs_read", Depth: 1, TS: base + 128060, CallTime: base + 1000})
	got := f.traceText()
	want := ` 0)     dd-136     |               |  ksys_read() {
 0)     dd-136     |               |    vfs_read() {
 0)     dd-136     |               |      /* rv: (rw_verify_area+0x4/0x130) */
 0)     dd-136     | ! 127.060 us  |    }
`
	if !strings.HasSuffix(got, want) {
		t.Errorf("got:\n%s\nwant the end:\n%s", got, want)
	}
}

// TestGraphRingLimit: function_graph records take their share of
// buffer_size_kb as other entries do, so that a full ring drops the
// oldest (the kernel's overwrite mode) instead of keeping every call of
// every function traced.
func TestGraphRingLimit(t *testing.T) {
	f := New(nil, Options{CPUs: 1, Major: 6, Minor: 12})
	f.mu.Lock()
	f.tracer = tracerGraph
	f.mu.Unlock()
	if err := writeFile(f, "buffer_size_kb", "4", true); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 10000; i++ {
		f.RecordGraph(GraphRecord{Pid: 136, Comm: "dd", Func: "vfs_read", Depth: 1, TS: uint64(2e9 + 1000*i)})
	}
	lines := strings.Count(f.traceText(), "vfs_read")
	f.mu.Lock()
	most := f.ringLimit() / (graphLineBytes + 2 + len("vfs_read"))
	f.mu.Unlock()
	if lines == 0 || lines > most {
		t.Errorf("%d graph lines kept in a 4 KB ring (10000 recorded)", lines)
	}
}
