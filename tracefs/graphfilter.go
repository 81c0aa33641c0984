package tracefs

import (
	"strconv"
	"strings"
	"syscall"

	"github.com/ktrace-dev/ktrace/filter"
)

// The function_graph tracer's own selections, at the top level only and
// for every graph tracer (the kernel keeps one global hash of each):
// set_graph_function limits the trace to the calls made inside one of
// its functions (their own calls included), set_graph_notrace leaves out
// its functions' calls and everything under them, and max_graph_depth
// (0: no limit) how many traced calls deep a task's calls are recorded.
// The files are parsed as set_ftrace_filter is, a word per write(2), but
// each word is only a glob (ftrace_graph_set_hash): no index, no
// ":mod:", no commands, and a "!" word must remove a selected function.

// graphConf is the graph tracer's settings as the backend takes them.
type graphConf struct {
	funcs, notrace []uint64
	max            uint32
}

// graphWord applies one word to a set_graph_function or
// set_graph_notrace edit: a glob selects the functions it matches, "!"
// first removes them. A word that selects nothing new (or, with "!",
// removes nothing) fails with EINVAL.
func (f *FS) graphWord(rx *funcRegex, word string) error {
	g, not := filter.ParseRegex(word)
	fail := true
	for i, r := range f.funcRecords() {
		if strings.HasPrefix(r.Name, invalidFuncPrefix) || !g.Match([]byte(r.Name), len(r.Name)+1) {
			continue
		}
		if !not {
			rx.set[i] = true
			fail = false
		} else if rx.set[i] {
			delete(rx.set, i)
			fail = false
		}
	}
	if fail {
		return syscall.EINVAL
	}
	return nil
}

// graphFilterText is set_graph_function or set_graph_notrace: the
// functions in the kernel's hash order, or the line saying that none is
// selected.
func (f *FS) graphFilterText(list funcList) string {
	recs := f.funcRecords()
	f.mu.Lock()
	set := f.funcs.sel(list).set
	idx := make([]int, 0, len(set))
	for i := range recs {
		if set[i] {
			idx = append(idx, i)
		}
	}
	f.mu.Unlock()
	if len(idx) == 0 {
		if list == listGraphNotrace {
			return "#### no functions disabled ####\n"
		}
		return "#### all functions enabled ####\n"
	}
	var b strings.Builder
	for _, j := range ftraceHashOrder(recs, idx) {
		b.WriteString(recs[idx[j]].Name + "\n")
	}
	return b.String()
}

// maxGraphDepthText is max_graph_depth: the kernel keeps an unsigned int
// and prints it as an int.
func (f *FS) maxGraphDepthText() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return strconv.Itoa(int(int32(f.funcs.maxDepth))) + "\n"
}

// writeMaxGraphDepth is a write to max_graph_depth: a decimal number as
// kstrtoul reads it, cut to the unsigned int the kernel keeps.
func (f *FS) writeMaxGraphDepth(p []byte) (int, error) {
	v, err := parseUlong(p)
	if err != nil {
		return 0, err
	}
	f.mu.Lock()
	f.funcs.maxDepth = uint32(v)
	f.mu.Unlock()
	f.graphChanged()
	return len(p), nil
}

// graphChanged passes the graph settings to the graph tracers running at
// the top level and in the instances.
func (f *FS) graphChanged() {
	recs := f.funcRecords()
	f.mu.Lock()
	c := &graphConf{max: f.funcs.maxDepth}
	for i, r := range recs {
		if f.funcs.graphFn.set[i] {
			c.funcs = append(c.funcs, r.Addr)
		}
		if f.funcs.graphNo.set[i] {
			c.notrace = append(c.notrace, r.Addr)
		}
	}
	f.mu.Unlock()
	f.graphConf.Store(c)
	f.updateGraph()
	f.eachInstance((*FS).updateGraph)
}

// updateGraph passes the graph settings on to the FS's tracer if it is
// function_graph.
func (f *FS) updateGraph() {
	f.mu.Lock()
	graph := f.funcs.graph
	f.mu.Unlock()
	if graph {
		f.updateFunctions()
	}
}
