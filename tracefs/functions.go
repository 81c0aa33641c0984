package tracefs

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/ktrace-dev/ktrace/filter"
	"github.com/ktrace-dev/ktrace/kernel"
)

// The function tracer and the files that steer it: current_tracer
// "function" records an entry for every call of the selected functions;
// set_ftrace_filter selects them (all when empty), set_ftrace_notrace
// takes some out, set_ftrace_pid and set_ftrace_notrace_pid select the
// tasks. available_filter_functions lists the functions there are (the
// kernel's ftrace records, from the model). With a backend that traces
// (FunctionTracer), the tracer is real; over the emulated registry the
// files keep their state and the tracer records nothing, as an enabled
// event records nothing there.

// FunctionTrace is what the function tracer traces.
type FunctionTrace struct {
	// Funcs are the functions whose entries are recorded, in record
	// order.
	Funcs []kernel.FtraceRecord
	// Pids are set_ftrace_pid's tasks (nil: every task) and NoPids
	// set_ftrace_notrace_pid's, which are never traced.
	Pids, NoPids []int
	// Stack: each entry is followed by the task's stack (the
	// func_stack_trace option).
	Stack bool
	// Fork: the pid lists follow forks (the function-fork option).
	Fork bool
	// Graph: the function_graph tracer, which records each function's
	// return too (FS.RecordGraph), instead of the function tracer.
	Graph bool
	// GraphFuncs (set_graph_function) and GraphNotrace
	// (set_graph_notrace) are addresses of functions: with GraphFuncs,
	// the graph tracer records only the calls made inside one of
	// theirs (their own included); it records none made inside one of
	// GraphNotrace's. MaxGraphDepth (max_graph_depth), when not 0, is
	// how many calls deep it records.
	GraphFuncs, GraphNotrace []uint64
	MaxGraphDepth            uint32
}

// FunctionPidReader is a function tracer whose pid lists change as it
// runs (function-fork).
type FunctionPidReader interface {
	FunctionTracePids() (pids, noPids []int, ok bool)
}

// FunctionTracer is a backend that runs the function tracer: each entry
// it records goes to the FS as any other trace line.
type FunctionTracer interface {
	// SetFunctionTrace starts tracing what t says, replacing what was
	// traced before; nil stops. A failure leaves nothing traced.
	SetFunctionTrace(t *FunctionTrace) error
}

// maxTracerSize is how much of a write to current_tracer the kernel
// reads (MAX_TRACER_SIZE).
const maxTracerSize = 100

// Tracer names.
const (
	tracerNop      = "nop"
	tracerFunction = "function"
	tracerGraph    = "function_graph"
)

// funcState is the FS's function tracer state (guarded by FS.mu).
type funcState struct {
	// filter and notrace are set_ftrace_filter and set_ftrace_notrace;
	// stack is stack_trace_filter, when the stack tracer is emulated;
	// graphFn and graphNo are set_graph_function and set_graph_notrace
	// (the top level's; instances have none).
	filter, notrace, stack funcSelection
	graphFn, graphNo       funcSelection
	// maxDepth is max_graph_depth.
	maxDepth     uint32
	pids, noPids map[int]bool
	// probes are the function commands (FUNC:COMMAND), newest first.
	probes []*funcProbe
	// running is whether the backend traces function entries now;
	// graph, whether as the function_graph tracer.
	running, graph bool
}

// funcSelection is what set_ftrace_filter or set_ftrace_notrace holds:
// record indices, and the ":mod:" selections of modules that are not
// loaded, kept for when they are (the kernel's cached mod entries),
// newest first.
type funcSelection struct {
	set  map[int]bool
	mods []funcMod
}

// clone is a copy of s that s does not share.
func (s funcSelection) clone() funcSelection {
	set := make(map[int]bool, len(s.set))
	for i := range s.set {
		set[i] = true
	}
	return funcSelection{set: set, mods: slices.Clone(s.mods)}
}

// funcList names a file of function selections: the ftrace_regex files
// set_ftrace_filter, set_ftrace_notrace and stack_trace_filter share the
// kernel's parser and differ in what they select for.
type funcList int

const (
	listFilter       funcList = iota // set_ftrace_filter
	listNotrace                      // set_ftrace_notrace
	listStack                        // stack_trace_filter
	listGraph                        // set_graph_function
	listGraphNotrace                 // set_graph_notrace
)

// funcLists are the files of function selections.
var funcLists = map[nodeKind]funcList{
	nSetFtraceFilter:  listFilter,
	nSetFtraceNotrace: listNotrace,
	nStackFilter:      listStack,
	nSetGraphFunction: listGraph,
	nSetGraphNotrace:  listGraphNotrace,
}

// isGraph reports whether list is one of the graph tracer's, which the
// kernel keeps in a hash of its own (ftrace_graph_set_hash).
func (l funcList) isGraph() bool { return l == listGraph || l == listGraphNotrace }

// sel is the selection of list.
func (fs *funcState) sel(list funcList) *funcSelection {
	switch list {
	case listNotrace:
		return &fs.notrace
	case listStack:
		return &fs.stack
	case listGraph:
		return &fs.graphFn
	case listGraphNotrace:
		return &fs.graphNo
	}
	return &fs.filter
}

// funcMod is a cached "FUNC:mod:MODULE" selection.
type funcMod struct{ fn, mod string }

// funcRecords is the kernel's ftrace records (nil: the FS has none, and
// no function tracer files).
func (f *FS) funcRecords() []kernel.FtraceRecord {
	top := f
	if f.parent != nil {
		top = f.parent
	}
	top.funcOnce.Do(func() {
		if top.made.Functions != nil {
			top.funcRecs = top.made.Functions()
		}
	})
	return top.funcRecs
}

// hasFunctions reports whether the FS has the function tracer.
func (f *FS) hasFunctions() bool { return f.made.Functions != nil }

// availableTracers lists the tracers, as available_tracers does: the
// function_graph and function tracers where the FS has them, and nop.
// An instance of 6.1 cannot run function_graph (the tracer allows
// instances from 6.12 on; seen in both kernels' instances).
func (f *FS) availableTracers() []string {
	if !f.hasFunctions() {
		return []string{tracerNop}
	}
	if f.parent != nil && f.texts.name == "6.1" {
		return []string{tracerFunction, tracerNop}
	}
	return []string{tracerGraph, tracerFunction, tracerNop}
}

// isFuncTracer reports whether a tracer is the function tracer or the
// function_graph tracer, which the function selection steers.
func isFuncTracer(name string) bool { return name == tracerFunction || name == tracerGraph }

// tracerName is current_tracer.
func (f *FS) tracerName() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.tracerLocked()
}

func (f *FS) tracerLocked() string {
	if f.tracer == "" {
		return tracerNop
	}
	return f.tracer
}

// writeCurrentTracer is a write to current_tracer: the name, blanks
// stripped, of a tracer in available_tracers, else EINVAL (the kernel's
// answer for a tracer it was not built with). While trace_pipe is open
// the tracer cannot change (EBUSY). A change clears the trace, as the
// kernel's tracer_init resets the buffer; the same tracer again changes
// nothing.
func (f *FS) writeCurrentTracer(p []byte) (int, error) {
	// tracing_set_tracer grows the buffer to its default size before
	// it looks the name up.
	f.expand()
	if len(p) > maxTracerSize {
		p = p[:maxTracerSize]
	}
	name := strings.TrimSpace(string(p))
	if !slices.Contains(f.availableTracers(), name) {
		return 0, syscall.EINVAL
	}
	f.mu.Lock()
	cur := f.tracerLocked()
	busy := f.pipeReaders > 0
	f.mu.Unlock()
	if name == cur {
		return len(p), nil
	}
	if busy {
		return 0, syscall.EBUSY
	}
	f.mu.Lock()
	f.tracer = tracerNop
	f.mu.Unlock()
	if isFuncTracer(cur) {
		f.stopFunctions()
	}
	f.clearTrace()
	f.mu.Lock()
	f.pipeGraph = nil
	f.mu.Unlock()
	if isFuncTracer(name) {
		if err := f.startFunctions(name == tracerGraph); err != nil {
			return 0, err
		}
	}
	f.mu.Lock()
	f.tracer = name
	f.mu.Unlock()
	return len(p), nil
}

// functionTrace is what the function tracer traces now (f.mu held).
func (f *FS) functionTraceLocked() *FunctionTrace {
	recs := f.funcRecords()
	t := &FunctionTrace{}
	for i, r := range recs {
		if len(f.funcs.filter.set) > 0 || len(f.funcs.filter.mods) > 0 {
			if !f.funcs.filter.set[i] {
				continue
			}
		}
		if f.funcs.notrace.set[i] {
			continue
		}
		t.Funcs = append(t.Funcs, r)
	}
	if len(f.funcs.pids) > 0 {
		t.Pids = sortedPids(f.funcs.pids)
	}
	t.NoPids = sortedPids(f.funcs.noPids)
	if i, ok := f.option("func_stack_trace"); ok {
		t.Stack = f.optOn[i]
	}
	if i, ok := f.option("function-fork"); ok {
		t.Fork = f.optOn[i]
	}
	t.Graph = f.funcs.graph
	if t.Graph {
		// func_stack_trace is the function tracer's option.
		t.Stack = false
		top := f
		if f.parent != nil {
			top = f.parent
		}
		if c := top.graphConf.Load(); c != nil {
			t.GraphFuncs, t.GraphNotrace, t.MaxGraphDepth = c.funcs, c.notrace, c.max
		}
	}
	return t
}

// startFunctions starts the backend's function tracer, or function_graph
// tracer when graph.
func (f *FS) startFunctions(graph bool) error {
	ft, ok := f.b.(FunctionTracer)
	if !ok {
		return nil
	}
	f.mu.Lock()
	f.funcs.graph = graph
	t := f.functionTraceLocked()
	f.mu.Unlock()
	if err := ft.SetFunctionTrace(t); err != nil {
		return err
	}
	f.mu.Lock()
	f.funcs.running = true
	f.mu.Unlock()
	return nil
}

// stopFunctions stops the backend's function tracer.
func (f *FS) stopFunctions() {
	f.mu.Lock()
	running := f.funcs.running
	f.funcs.running = false
	f.mu.Unlock()
	if ft, ok := f.b.(FunctionTracer); ok && running {
		f.sync()
		_ = ft.SetFunctionTrace(nil)
	}
}

// updateFunctions passes a change of the function selection to the
// backend while the function tracer runs. The kernel cannot fail there;
// a backend that cannot trace the new selection keeps tracing the old
// one and says why.
func (f *FS) updateFunctions() {
	f.syncFuncPids()
	ft, ok := f.b.(FunctionTracer)
	f.mu.Lock()
	run := ok && isFuncTracer(f.tracerLocked()) && f.funcs.running
	var t *FunctionTrace
	if run {
		t = f.functionTraceLocked()
	}
	f.mu.Unlock()
	if !run {
		return
	}
	if err := ft.SetFunctionTrace(t); err != nil {
		f.note(fmt.Sprintf("ktrace: function tracer: the new selection is not traced: %v", err))
	}
}

// note writes one line to the FS's warning writer.
func (f *FS) note(s string) {
	if f.warn != nil {
		fmt.Fprintln(f.warn, s)
	}
}

func sortedPids(set map[int]bool) []int {
	out := make([]int, 0, len(set))
	for p := range set {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

// availableFunctionsText is available_filter_functions: one record per
// line, a module's function followed by its module in brackets; with
// addrs (available_filter_functions_addrs) each line starts with the
// function's address.
func (f *FS) availableFunctionsText(addrs bool) string {
	var b strings.Builder
	for _, r := range f.funcRecords() {
		if addrs {
			fmt.Fprintf(&b, "%016x ", r.Loc)
		}
		b.WriteString(r.Name)
		if r.Module != "" {
			b.WriteString(" [" + r.Module + "]")
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// funcFilterText is set_ftrace_filter, set_ftrace_notrace or
// stack_trace_filter: the selected functions in record order, or the
// line saying that none is selected, then the cached module selections
// and (set_ftrace_filter only) the function commands.
func (f *FS) funcFilterText(list funcList) string {
	if list.isGraph() {
		return f.graphFilterText(list)
	}
	notrace := list == listNotrace
	recs := f.funcRecords()
	f.mu.Lock()
	defer f.mu.Unlock()
	sel := f.funcs.sel(list)
	set, mods := sel.set, sel.mods
	var b strings.Builder
	if len(set) == 0 && (notrace || len(mods) == 0) {
		// A filter holding only cached module selections traces
		// nothing: it does not say all functions are enabled.
		if notrace {
			b.WriteString("#### no functions disabled ####\n")
		} else {
			b.WriteString("#### all functions enabled ####\n")
		}
	} else {
		for i, r := range recs {
			if set[i] {
				b.WriteString(r.Name + "\n")
			}
		}
	}
	for _, m := range mods {
		fmt.Fprintf(&b, "%s:mod:%s\n", m.fn, m.mod)
	}
	if list == listFilter {
		var probes []string
		for _, p := range f.funcs.probes {
			for _, i := range p.hashOrder(recs) {
				probes = append(probes, p.text(recs[p.entries[i].rec].Name, i))
			}
		}
		if len(mods) > 0 {
			// The kernel's iterator counts the functions it listed
			// against the commands when cached module selections
			// come between: the first F command lines are lost.
			probes = probes[min(len(set), len(probes)):]
		}
		for _, l := range probes {
			b.WriteString(l)
		}
	}
	return b.String()
}

// funcPidText is set_ftrace_pid or set_ftrace_notrace_pid.
func (f *FS) funcPidText(notrace bool) string {
	f.syncFuncPids()
	f.mu.Lock()
	defer f.mu.Unlock()
	set := f.funcs.pids
	if notrace {
		set = f.funcs.noPids
	}
	if len(set) == 0 {
		return "no pid\n"
	}
	// The kernel's iterator takes PID_MAX_LIMIT for its end marker: a
	// listed 4194304 reads as "no pid".
	return strings.ReplaceAll("\n"+pidListText(set), "\n"+strconv.Itoa(pidMaxLimit)+"\n", "\nno pid\n")[1:]
}

// syncFuncPids takes the pid lists as the running function tracer has
// them (function-fork adds children and drops freed tasks).
func (f *FS) syncFuncPids() {
	r, ok := f.b.(FunctionPidReader)
	if !ok {
		return
	}
	pids, noPids, ok := r.FunctionTracePids()
	if !ok {
		return
	}
	set := func(list []int) map[int]bool {
		if len(list) == 0 {
			return nil
		}
		m := map[int]bool{}
		for _, p := range list {
			m[p] = true
		}
		return m
	}
	f.mu.Lock()
	if len(f.funcs.pids) > 0 {
		f.funcs.pids = set(pids)
	}
	if len(f.funcs.noPids) > 0 {
		f.funcs.noPids = set(noPids)
	}
	f.mu.Unlock()
}

// writeFuncPids adds the pids of a write to set_ftrace_pid or
// set_ftrace_notrace_pid (as set_event_pid's writes).
func (f *FS) writeFuncPids(notrace bool, p []byte) (int, error) {
	add, err := parseFuncPids(p)
	if err != nil {
		return 0, err
	}
	f.syncFuncPids()
	f.mu.Lock()
	set := &f.funcs.pids
	if notrace {
		set = &f.funcs.noPids
	}
	if *set == nil {
		*set = map[int]bool{}
	}
	for _, v := range add {
		(*set)[v] = true
	}
	f.mu.Unlock()
	f.updateFunctions()
	return len(p), nil
}

// parseFuncPids reads a write to set_ftrace_pid or set_ftrace_notrace_pid:
// blank-separated numbers (kstrtoul base 0, at most 127 characters), each
// cut to 32 bits; a pid from 2^30 on is EPERM, a bad word EINVAL, and
// either fails the whole write.
func parseFuncPids(p []byte) ([]int, error) {
	var out []int
	for _, w := range strings.Fields(string(p)) {
		if len(w) > 127 {
			return nil, syscall.EINVAL
		}
		v, err := strconv.ParseUint(w, 0, 64)
		if err != nil {
			return nil, syscall.EINVAL
		}
		v &= 0xffffffff
		if v >= 1<<30 {
			return nil, syscall.EPERM
		}
		out = append(out, int(v))
	}
	return out, nil
}

// clearFuncPids empties a pid list (a truncating open).
func (f *FS) clearFuncPids(notrace bool) {
	f.mu.Lock()
	if notrace {
		f.funcs.noPids = nil
	} else {
		f.funcs.pids = nil
	}
	f.mu.Unlock()
	f.updateFunctions()
}

// funcRegex is an open set_ftrace_filter or set_ftrace_notrace for
// writing: the kernel edits a copy of the selection (an empty one when
// opened with O_TRUNC) and puts it in place when the file is closed.
// Each write(2) is parsed as the kernel's trace_get_user parses it: it
// takes blanks and at most one word, which a later write may continue.
type funcRegex struct {
	list funcList
	funcSelection
	// word is the word being read; cont is set while a write ended in
	// its middle.
	word []byte
	cont bool
	// dirty is set while the edit holds what is not in place yet (an
	// open edits from the start; a commit puts it in place).
	dirty bool
}

// openFuncRegex starts an edit of a selection.
func (f *FS) openFuncRegex(list funcList, trunc bool) *funcRegex {
	rx := &funcRegex{list: list, funcSelection: funcSelection{set: map[int]bool{}}, dirty: true}
	if trunc {
		return rx
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	rx.funcSelection = f.funcs.sel(list).clone()
	return rx
}

// funcWordMax is the longest word the kernel's parser takes: its buffer
// (FTRACE_BUFF_MAX, KSYM_SYMBOL_LEN and room for wildcards) less the
// terminating NUL.
const funcWordMax = 669

// isSpace is the kernel's isspace.
func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'
}

// writeFuncRegex is one write(2): leading blanks are skipped (unless a
// word is being continued), then one word is read up to a blank or NUL,
// which is taken too; the bytes taken are the count returned. A finished
// word is applied at once, and one that fails fails the write.
func (f *FS) writeFuncRegex(rx *funcRegex, p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	rx.dirty = true
	read := 0
	next := func() byte { c := p[read]; read++; return c }
	ch := next()
	if !rx.cont {
		for read < len(p) && isSpace(ch) {
			ch = next()
		}
		rx.word = rx.word[:0]
		if isSpace(ch) || ch == 0 {
			return read, nil
		}
	}
	for read < len(p) && !isSpace(ch) && ch != 0 {
		if len(rx.word) >= funcWordMax {
			return 0, syscall.EINVAL
		}
		rx.word = append(rx.word, ch)
		ch = next()
	}
	switch {
	case isSpace(ch) || ch == 0:
		rx.cont = false
	case len(rx.word) < funcWordMax:
		rx.cont = true
		rx.word = append(rx.word, ch)
	default:
		return 0, syscall.EINVAL
	}
	if len(rx.word) > 0 && !rx.cont {
		word := string(rx.word)
		rx.word = rx.word[:0]
		if err := f.funcWord(rx, word); err != nil {
			return 0, err
		}
	}
	return read, nil
}

// commitFuncRegex puts the edit in place, at the close or before (a FUSE
// close's FLUSH): a word left unfinished is applied first (its error
// goes nowhere, as the kernel's release has no one to tell); the edit can
// go on from there.
func (f *FS) commitFuncRegex(rx *funcRegex) {
	if !rx.dirty {
		// Put in place already: a later commit of another open
		// must not be undone by this one's release.
		return
	}
	rx.dirty = false
	if len(rx.word) > 0 {
		_ = f.funcWord(rx, string(rx.word))
		rx.word, rx.cont = rx.word[:0], false
	}
	sel := rx.funcSelection.clone()
	f.mu.Lock()
	*f.funcs.sel(rx.list) = sel
	f.mu.Unlock()
	switch {
	case rx.list.isGraph():
		f.graphChanged()
	case rx.list != listStack:
		f.updateFunctions()
	}
}

// funcWord applies one word: a pattern ("!" first removes what it
// matches), "PATTERN:mod:MODULE", or a function command
// "PATTERN:COMMAND[:ARGS]" (set_ftrace_filter only).
func (f *FS) funcWord(rx *funcRegex, word string) error {
	if rx.list.isGraph() {
		return f.graphWord(rx, word)
	}
	fn, rest, cmd := strings.Cut(word, ":")
	if !cmd {
		if !f.matchFuncs(rx.set, fn, "", false) {
			return syscall.EINVAL
		}
		return nil
	}
	command, args, _ := strings.Cut(rest, ":")
	if rx.list == listStack && (command == "mod" || funcCommands[command]) {
		// The stack tracer's ops belong to no trace array, and every
		// command, "mod" too, needs one.
		return syscall.ENODEV
	}
	if command == "mod" {
		return f.funcModWord(rx, fn, args)
	}
	switch {
	case rx.list != listFilter:
		// Commands register on the filter's ops alone.
		return syscall.EINVAL
	}
	return f.funcCommand(fn, command, rest)
}

// funcCommands are the commands the kernel registers for set_ftrace_filter
// besides "mod".
var funcCommands = map[string]bool{
	"traceon": true, "traceoff": true, "stacktrace": true, "snapshot": true,
	"dump": true, "cpudump": true, "enable_event": true, "disable_event": true,
}

// funcModWord applies "FUNC:mod:MODULE": the functions of the module
// matching FUNC (all for an empty FUNC); a module with none (not loaded)
// is cached as written (twice if written twice), newest first, for when
// it is loaded. "!FUNC"
// removes a cached entry, every entry of the module for an empty FUNC or
// "*"; removing none is EINVAL.
func (f *FS) funcModWord(rx *funcRegex, fn, mod string) error {
	if f.matchFuncs(rx.set, fn, mod, true) {
		return nil
	}
	if name, ok := strings.CutPrefix(fn, "!"); ok {
		n := len(rx.mods)
		rx.mods = slices.DeleteFunc(rx.mods, func(m funcMod) bool {
			return m.mod == mod && (name == "" || name == "*" || m.fn == name)
		})
		if len(rx.mods) == n {
			return syscall.EINVAL
		}
		return nil
	}
	rx.mods = append([]funcMod{{fn: fn, mod: mod}}, rx.mods...)
	return nil
}

// matchFuncs adds to set (removes, for a "!" pattern) the records
// matching the pattern, and with module set those of matching modules
// only; it reports whether any record matched.
func (f *FS) matchFuncs(set map[int]bool, pattern, mod string, withMod bool) bool {
	recs := f.funcRecords()
	g, not := filter.ParseRegex(pattern)
	if g.Pattern != "" && g.Pattern[0] >= '0' && g.Pattern[0] <= '9' {
		// An index into available_filter_functions, from 1. 6.12
		// reads it with kstrtoul (the whole word is the number), 6.1
		// with simple_strtoul (what number it starts with).
		n, err := strconv.ParseUint(g.Pattern, 0, 64)
		if f.texts.name != "6.12" {
			n, err = simpleStrtoul(g.Pattern), nil
		}
		if err != nil || n == 0 || n > uint64(len(recs)) {
			return false
		}
		enter(set, int(n-1), not)
		return true
	}
	var mg *filter.Regex
	excludeMod := false
	if withMod {
		mg, excludeMod = filter.ParseRegex(mod)
	}
	found := false
	for i, r := range recs {
		if strings.HasPrefix(r.Name, invalidFuncPrefix) {
			// A disabled record (a discarded weak function's
			// leftover on 6.1): listed, never matched.
			continue
		}
		if withMod {
			if mg.Pattern == "" {
				// A blank module matches every module's function
				// (or, negated, every vmlinux function).
				if excludeMod == (r.Module != "") {
					continue
				}
			} else {
				matches := r.Module != "" && mg.Match([]byte(r.Module), len(r.Module)+1)
				if matches == excludeMod {
					continue
				}
			}
			if g.Pattern == "" {
				enter(set, i, not)
				found = true
				continue
			}
		}
		if g.Match([]byte(r.Name), len(r.Name)+1) {
			enter(set, i, not)
			found = true
		}
	}
	return found
}

// invalidFuncPrefix names the records available_filter_functions lists
// for functions the kernel dropped (FTRACE_FL_DISABLED), on 6.1.
const invalidFuncPrefix = "__ftrace_invalid_address__"

// simpleStrtoul is the kernel's simple_strtoul with base 0: the number a
// string starts with (0x for hex, 0 for octal), 0 for none.
func simpleStrtoul(s string) uint64 {
	base := uint64(10)
	switch {
	case len(s) > 2 && (s[:2] == "0x" || s[:2] == "0X") && isHex(s[2]):
		base, s = 16, s[2:]
	case len(s) > 1 && s[0] == '0':
		base, s = 8, s[1:]
	}
	var n uint64
	for i := 0; i < len(s); i++ {
		d := uint64(16)
		switch c := s[i]; {
		case c >= '0' && c <= '9':
			d = uint64(c - '0')
		case c >= 'a' && c <= 'f':
			d = uint64(c-'a') + 10
		case c >= 'A' && c <= 'F':
			d = uint64(c-'A') + 10
		}
		if d >= base {
			break
		}
		n = n*base + d
	}
	return n
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func enter(set map[int]bool, i int, clear bool) {
	if clear {
		delete(set, i)
	} else {
		set[i] = true
	}
}
