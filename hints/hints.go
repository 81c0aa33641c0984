package hints

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/cilium/ebpf/btf"
	"github.com/ktrace-dev/ktrace/events"
	"github.com/ktrace-dev/ktrace/grammar"
	"github.com/ktrace-dev/ktrace/kernel"
	"github.com/ktrace-dev/ktrace/tracefs"
)

// A hint explains a rejected line beyond the kernel's own message, from
// what the model knows. Which error codes get which hint is the hint table
// beside the error table (grammar.Code.Hint); this file builds the text.
// Hints go to stderr as "hint: ..." lines after the kernel's text (JSON:
// the "hints" array); they never change the kernel's message, caret or
// errno.

// Hinter makes hints for lines written to a tracefs of Model's kernel in
// Dialect's syntax.
type Hinter struct {
	Model   *kernel.Model
	Dialect *grammar.Dialect
}

// For returns the hints for a line that the write to f rejected with log
// (nil when the kernel logged nothing).
func (e *Hinter) For(line string, f events.File, log *events.LogEntry) []string {
	// A syntax of a newer release explains the rejection better than
	// a correction of what was written.
	if h := e.needsHint(line, f); h != "" {
		return []string{h}
	}
	var out []string
	if log != nil {
		if code, ok := e.CodeOf(log.Msg); ok {
			if h := e.codeHint(code, log); h != "" {
				out = append(out, h)
			}
		}
	}
	return out
}

// CodeOf maps an error_log message back to its code under the model's
// dialect.
func (e *Hinter) CodeOf(msg string) (grammar.Code, bool) {
	for _, c := range grammar.Codes() {
		if e.Dialect.Message(c) == msg {
			return c, true
		}
	}
	return grammar.ErrNone, false
}

// needsHint names the release a line needs when the model's kernel
// rejects it and 6.12's syntax accepts it.
func (e *Hinter) needsHint(line string, f events.File) string {
	if e.Dialect == grammar.Latest {
		return ""
	}
	if err := events.NewRegistry(e.Model, grammar.Latest).Exec(f, line); err != nil {
		return ""
	}
	n := events.LineNeeds(e.Model, line)
	if len(n) == 0 {
		return ""
	}
	return fmt.Sprintf("Linux %s rejects this line: it needs %s; --syntax latest accepts it and ktrace runs it through eBPF (record, sh, mount)", e.Dialect.Name, strings.Join(n, "; "))
}

// caretToken returns the argv of the logged command, the index of the
// token the caret points into and the caret's offset inside it.
func caretToken(log *events.LogEntry) (argv []string, k, off int) {
	argv = strings.Split(log.Cmd, " ")
	pos := 0
	for i, a := range argv {
		if log.Pos <= pos+len(a) {
			return argv, i, log.Pos - pos
		}
		pos += len(a) + 1
	}
	return argv, len(argv) - 1, 0
}

// placeFunc is the function a probe place names: "SYM", "MOD:SYM",
// "SYM+OFFS" and "SYM%return" all name SYM (with MOD: kept).
func placeFunc(place string) string {
	if i := strings.IndexAny(place, "+%"); i >= 0 {
		place = place[:i]
	}
	return place
}

// argParts splits a fetch argument "NAME=BODY:TYPE" into its body and
// type; bodyOff is where the body starts in the token.
func argParts(tok string) (body, typ string, bodyOff int) {
	body = tok
	if i := strings.IndexByte(body, '='); i >= 0 && !strings.ContainsAny(body[:i], "(+$%@") {
		body, bodyOff = body[i+1:], i+1
	}
	if i := strings.LastIndexByte(body, ':'); i >= 0 {
		body, typ = body[:i], body[i+1:]
	}
	return body, typ, bodyOff
}

// codeHint builds the hint of the table's kind for code.
func (e *Hinter) codeHint(code grammar.Code, log *events.LogEntry) string {
	argv, k, off := caretToken(log)
	tok := ""
	if k >= 0 && k < len(argv) {
		tok = argv[k]
	}
	place := ""
	if len(argv) > 1 {
		place = argv[1]
	}
	kind := byte(0)
	if len(argv) > 0 && argv[0] != "" {
		kind = argv[0][0]
	}
	m := e.Model
	switch code.Hint() {
	case grammar.HintSymbol:
		fn := placeFunc(place)
		if code == grammar.ErrBadRetprobe {
			return fmt.Sprintf("a return probe goes on a function's entry: r %s (no offset), or a kprobe at %s", fn, place)
		}
		if code == grammar.ErrNoBTFEntry {
			if n, ok := e.nearestBTFFunc(fn); ok {
				return fmt.Sprintf("BTF has no function %s; did you mean %s?", fn, n)
			}
			if strings.Contains(fn, ".") {
				return fmt.Sprintf("BTF has no function %s: compiler clones (.constprop, .isra, .part, .cold) have none; fetch its arguments by register (%%%s, ...)", fn, strings.Join(e.Model.Arch().ArgRegs[:2], ", %"))
			}
			return fmt.Sprintf("BTF has no function %s (inlined, or a static function BTF leaves out): fetch its arguments by register", fn)
		}
		if n, ok := m.NearestFunc(fn); ok {
			return fmt.Sprintf("kallsyms has no %s; did you mean %s?", fn, n)
		}
		return fmt.Sprintf("kallsyms has no %s: 'ktrace funcs GLOB' lists the functions", fn)
	case grammar.HintType:
		_, typ, _ := argParts(tok)
		if strings.HasPrefix(typ, "b") && strings.ContainsAny(typ, "@/") {
			return "a bitfield type is b<bit-width>@<bit-offset>/<container-size>, e.g. b4@3/32"
		}
		if t, ok := typeAlias[strings.ToLower(strings.TrimSpace(typ))]; ok {
			return fmt.Sprintf("no type %s; did you mean %s?", typ, t)
		}
		if n, ok := grammar.Closest(typ, e.typeNames()); ok {
			return fmt.Sprintf("no type %s; did you mean %s?", typ, n)
		}
		return fmt.Sprintf("no type %s; the types are %s", typ, strings.Join(e.typeNames(), ", "))
	case grammar.HintStringType:
		if code == grammar.ErrBadType4Str {
			body, _, _ := argParts(tok)
			for _, p := range e.btfParams(e.btfFunc(kind, place)) {
				if p.Name == body {
					return fmt.Sprintf("%s is %s: a string type needs a char pointer or array (or +0(%s):string to read the memory it points to)", body, kernel.CType(p.Type), body)
				}
			}
		}
		return "string, ustring and symstr read memory: give an address to dereference, +0(%si):string, or a BTF char * argument (filename:string); $comm and \"immediate\" strings take only a string type"
	case grammar.HintRegister:
		reg := registerAt(tok, off)
		names := make([]string, 0, len(m.Arch().Regs))
		for r := range m.Arch().Regs {
			names = append(names, r)
		}
		slices.Sort(names)
		if n, ok := grammar.Closest(strings.ToLower(reg), names); ok {
			return fmt.Sprintf("no register %%%s on %s; did you mean %%%s?", reg, m.Arch().Name, n)
		}
		return fmt.Sprintf("no register %%%s on %s; its registers are %%%s", reg, m.Arch().Name, strings.Join(names, " %"))
	case grammar.HintVar:
		v := varAt(tok, off)
		if kind == 'e' {
			return e.eventFieldHint(v, place)
		}
		if code == grammar.ErrRetvalOnProbe || v == "$retval" {
			return fmt.Sprintf("$retval is read on return: r %s, or f %s%%return", placeFunc(place), placeFunc(place))
		}
		if strings.HasPrefix(v, "$arg") && e.Dialect.BTFArgs {
			fn := e.btfFunc(kind, place)
			if _, _, err := m.FuncProto(fn); err != nil {
				return fmt.Sprintf("%s needs the function's BTF prototype and BTF has no %s; fetch its arguments by register (%%%s, ...)", v, fn, strings.Join(m.Arch().ArgRegs[:2], ", %"))
			}
		}
		cands := []string{"$retval", "$stack", "$stack0", "$comm"}
		if e.Dialect.BTFArgs {
			cands = append(cands, "$arg1", "$arg*")
		}
		if n, ok := grammar.Closest(v, cands); ok {
			return fmt.Sprintf("no variable %s; did you mean %s?", v, n)
		}
		return fmt.Sprintf("no variable %s; the $-variables are %s, $stackN, $argN", v, strings.Join(cands, ", "))
	case grammar.HintBTFParam:
		fn := e.btfFunc(kind, place)
		name := identAt(tok, off)
		ps := e.btfParams(fn)
		if len(ps) == 0 {
			return fmt.Sprintf("%s has no parameters in BTF", fn)
		}
		var names []string
		for _, p := range ps {
			names = append(names, p.Name)
		}
		if n, ok := grammar.Closest(name, names); ok {
			for _, p := range ps {
				if p.Name == n {
					return fmt.Sprintf("%s has no parameter %s; did you mean %s (%s)?", fn, name, n, kernel.CType(p.Type))
				}
			}
		}
		var all []string
		for _, p := range ps {
			all = append(all, p.Name+" ("+kernel.CType(p.Type)+")")
		}
		return fmt.Sprintf("%s has no parameter %s; its parameters are %s", fn, name, strings.Join(all, ", "))
	case grammar.HintBTFMember:
		return e.memberHint(code, kind, place, tok, off)
	case grammar.HintRegProbe:
		return e.regProbeHint(kind, place)
	case grammar.HintNonUniq:
		fn := placeFunc(place)
		syms := m.AllSymbols(strings.TrimPrefix(fn, "vmlinux:"))
		var addrs []string
		for _, s := range syms {
			where := ""
			if s.Module != "" {
				where = " [" + s.Module + "]"
			}
			addrs = append(addrs, fmt.Sprintf("0x%x%s", s.Addr, where))
			if len(addrs) == 4 {
				addrs = append(addrs, "...")
				break
			}
		}
		return fmt.Sprintf("%d symbols are named %s (%s): probe one by address, p 0xADDR, or MOD:%s for a module's", len(syms), fn, strings.Join(addrs, ", "), fn)
	case grammar.HintRetval:
		fn := e.btfFunc(kind, place)
		return fmt.Sprintf("%s returns void: there is no $retval to read; its arguments are readable at return ($argN on return probes)", fn)
	}
	return ""
}

// typeAlias maps C spellings people write after ':' to the kernel's
// fetch type names.
var typeAlias = map[string]string{
	"int8": "s8", "int16": "s16", "int32": "s32", "int64": "s64",
	"uint8": "u8", "uint16": "u16", "uint32": "u32", "uint64": "u64",
	"i8": "s8", "i16": "s16", "i32": "s32", "i64": "s64",
	"int": "s32", "unsigned": "u32", "uint": "u32", "short": "s16", "ushort": "u16",
	"long": "s64", "ulong": "u64", "unsigned long": "u64", "size_t": "u64", "ssize_t": "s64",
	"pid_t": "s32", "bool": "u8", "byte": "u8",
	"char*": "string", "char *": "string", "str": "string", "cstring": "string",
	"ptr": "x64", "pointer": "x64", "hex": "x64", "void*": "x64", "addr": "x64",
	"sym": "symbol", "ksym": "symbol",
}

// typeNames are the fetch types of the dialect.
func (e *Hinter) typeNames() []string {
	n := []string{"u8", "u16", "u32", "u64", "s8", "s16", "s32", "s64", "x8", "x16", "x32", "x64", "string", "ustring", "symstr", "symbol"}
	if e.Dialect.CharType {
		n = append(n, "char")
	}
	return n
}

// registerAt is the register name at off in tok (after '%').
func registerAt(tok string, off int) string {
	i := min(max(off, 0), len(tok))
	if j := strings.LastIndexByte(tok[:i], '%'); j >= 0 {
		i = j
	} else if j := strings.IndexByte(tok, '%'); j >= 0 {
		i = j
	}
	if i < len(tok) && tok[i] == '%' {
		i++
	}
	end := i
	for end < len(tok) && isIdentByte(tok[end]) {
		end++
	}
	return tok[i:end]
}

// varAt is the $-variable at off in tok.
func varAt(tok string, off int) string {
	i := min(max(off, 0), len(tok))
	if j := strings.LastIndexByte(tok[:min(i+1, len(tok))], '$'); j >= 0 {
		i = j
	} else if j := strings.IndexByte(tok, '$'); j >= 0 {
		i = j
	}
	end := i + 1
	for end < len(tok) && (isIdentByte(tok[end]) || tok[end] == '*') {
		end++
	}
	return tok[i:min(end, len(tok))]
}

// identAt is the identifier starting at off in tok.
func identAt(tok string, off int) string {
	i := min(max(off, 0), len(tok))
	end := i
	for end < len(tok) && isIdentByte(tok[end]) {
		end++
	}
	return tok[i:end]
}

func isIdentByte(c byte) bool {
	return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
}

// btfFunc is the function whose BTF prototype types a probe's
// arguments: the place's function, or a tracepoint's probe stub.
func (e *Hinter) btfFunc(kind byte, place string) string {
	fn := placeFunc(place)
	if _, name, ok := strings.Cut(fn, ":"); ok {
		fn = name
	}
	if kind == 't' {
		return "__probestub_" + fn
	}
	return fn
}

// btfParams are the parameters a probe's arguments name (a tracepoint
// stub's private data left out).
func (e *Hinter) btfParams(fn string) []btf.FuncParam {
	_, proto, err := e.Model.FuncProto(fn)
	if err != nil {
		return nil
	}
	ps := proto.Params
	if strings.HasPrefix(fn, "__probestub_") && len(ps) > 0 {
		ps = ps[1:]
	}
	return ps
}

// nearestBTFFunc is the function with BTF nearest to name.
func (e *Hinter) nearestBTFFunc(name string) (string, bool) {
	n, ok := e.Model.NearestFunc(name)
	if !ok {
		return "", false
	}
	if _, _, err := e.Model.FuncProto(n); err != nil {
		return "", false
	}
	return n, true
}

// memberHint explains NO_BTF_FIELD (no such member) and NO_PTR_STRCT
// ('->' or '.' on something that is not a struct or union): it walks the
// argument's BTF path as the kernel does up to the failing step and names
// the nearest member with its type, or the type that has no members.
func (e *Hinter) memberHint(code grammar.Code, kind byte, place, tok string, off int) string {
	body, _, bodyOff := argParts(tok)
	if i := strings.IndexAny(body, "+("); i == 0 {
		return ""
	}
	fn := e.btfFunc(kind, place)
	// The base: a parameter name, $argN or $retval.
	end := 0
	for end < len(body) && (isIdentByte(body[end]) || body[end] == '$') {
		end++
	}
	base := body[:end]
	var t btf.Type
	switch {
	case base == "$retval":
		if _, proto, err := e.Model.FuncProto(fn); err == nil {
			t = proto.Return
		}
	case strings.HasPrefix(base, "$arg"):
		var n int
		if _, err := fmt.Sscanf(base, "$arg%d", &n); err == nil {
			if ps := e.btfParams(fn); n >= 1 && n <= len(ps) {
				t = ps[n-1].Type
				base = ps[n-1].Name
			}
		}
	default:
		for _, p := range e.btfParams(fn) {
			if p.Name == base {
				t = p.Type
			}
		}
	}
	if t == nil {
		return ""
	}
	path := base
	rest := body[end:]
	caret := off - bodyOff
	pos := end
	for rest != "" {
		op := ""
		switch {
		case strings.HasPrefix(rest, "->"):
			op = "->"
		case strings.HasPrefix(rest, "."):
			op = "."
		default:
			return ""
		}
		rest = rest[len(op):]
		pos += len(op)
		n := 0
		for n < len(rest) && isIdentByte(rest[n]) {
			n++
		}
		name := rest[:n]
		target := btf.UnderlyingType(t)
		if op == "->" {
			p, ok := target.(*btf.Pointer)
			if !ok {
				return fmt.Sprintf("%s is %s, not a pointer to a struct or union: '->' cannot follow it", path, kernel.CType(t))
			}
			target = btf.UnderlyingType(p.Target)
		}
		switch target.(type) {
		case *btf.Struct, *btf.Union:
		default:
			if code == grammar.ErrNoPtrStrct || pos >= caret {
				s := fmt.Sprintf("%s is %s, not a pointer to a struct or union: '%s%s' has nothing to read", path, kernel.CType(t), op, name)
				if isCharPtr(t) {
					s += fmt.Sprintf("; read the string with %s:string (ustring for user memory)", path)
				}
				return s
			}
			return ""
		}
		mb, found := memberOf(target, name)
		if !found {
			var names []string
			members := membersOf(target)
			for _, m := range members {
				names = append(names, m.Name)
			}
			if c, ok := grammar.Closest(name, names); ok {
				for _, m := range members {
					if m.Name == c {
						return fmt.Sprintf("%s has no member %s; did you mean %s (%s)?", kernel.CType(target), name, c, kernel.CType(m.Type))
					}
				}
			}
			return fmt.Sprintf("%s has no member %s ('ktrace args %s' shows the parameters' types)", kernel.CType(target), name, fn)
		}
		t = mb.Type
		path += op + name
		rest = rest[n:]
		pos += n
	}
	return ""
}

// isCharPtr reports whether t is a pointer to (const) char.
func isCharPtr(t btf.Type) bool {
	p, ok := btf.UnderlyingType(t).(*btf.Pointer)
	if !ok {
		return false
	}
	i, ok := btf.UnderlyingType(p.Target).(*btf.Int)
	return ok && i.Size == 1
}

// membersOf lists a struct's or union's named members, those of its
// anonymous members included, as the kernel's member lookup sees them.
func membersOf(t btf.Type) []btf.Member {
	var out []btf.Member
	var walk func(t btf.Type, depth int)
	walk = func(t btf.Type, depth int) {
		ms, _ := kernel.Members(t)
		for _, m := range ms {
			if m.Name == "" && depth < 8 {
				walk(btf.UnderlyingType(m.Type), depth+1)
				continue
			}
			out = append(out, m)
		}
	}
	walk(t, 0)
	return out
}

func memberOf(t btf.Type, name string) (btf.Member, bool) {
	for _, m := range membersOf(t) {
		if m.Name == name {
			return m, true
		}
	}
	return btf.Member{}, false
}

// regProbeHint explains FAIL_REG_PROBE: for kprobes the blacklist,
// notrace or patch-site reason; for fprobes whether ftrace can trace the
// function (and whether a kprobe could).
func (e *Hinter) regProbeHint(kind byte, place string) string {
	m := e.Model
	fn := placeFunc(place)
	switch kind {
	case 'f':
		if strings.ContainsAny(fn, "*?[") {
			return fmt.Sprintf("no function ftrace can trace matches %s (available_filter_functions)", fn)
		}
		fi := m.FuncInfo(fn)
		s := fmt.Sprintf("%s is not traceable by ftrace: available_filter_functions does not list it", fn)
		switch {
		case fi.Addr == 0 && fi.Module != "" && !m.ModuleLoaded(fi.Module):
			s = fmt.Sprintf("module %s is not loaded", fi.Module)
		case fi.Addr == 0:
			s = fmt.Sprintf("kallsyms has no %s", fn)
			if n, ok := m.NearestFunc(fn); ok {
				s += "; did you mean " + n + "?"
			}
		case fi.Kprobe:
			s += fmt.Sprintf("; a kprobe can: p %s", fn)
		case fi.KprobeWhy != "":
			s += "; no kprobe either: " + fi.KprobeWhy
		}
		return s
	case 't':
		return fmt.Sprintf("the tracepoint's probe stub __probestub_%s cannot be traced", fn)
	}
	var addr uint64
	if strings.HasPrefix(place, "0x") {
		if _, err := fmt.Sscanf(place, "0x%x", &addr); err != nil {
			return ""
		}
	} else {
		sym := placeFunc(place)
		a, ok := m.LookupName(sym)
		if !ok {
			return ""
		}
		var offs uint64
		if i := strings.IndexByte(place, '+'); i >= 0 {
			fmt.Sscanf(strings.TrimSuffix(place[i+1:], "%return"), "%v", &offs)
		}
		addr = a + offs
	}
	if why := m.KprobeRefusal(addr); why != "" {
		if fi := m.FuncInfo(fn); fi.Fprobe && e.Dialect.Fprobe && fi.Addr == addr {
			why += fmt.Sprintf("; ftrace can trace it: f %s", fn)
		}
		return why
	}
	if kind == 'r' {
		return fmt.Sprintf("a return probe goes on a function's entry: r %s", fn)
	}
	return ""
}

// eventFieldHint is the hint for an event probe's unknown $-variable v:
// the attached event's fields (what $FIELD reads) and $comm.
func (e *Hinter) eventFieldHint(v, place string) string {
	sys, name, ok := strings.Cut(place, ".")
	if !ok {
		sys, name, _ = strings.Cut(place, "/")
	}
	tps, _, err := e.Model.Tracepoints()
	if err != nil {
		return fmt.Sprintf("no field %s in %s; events/%s/%s/format lists its fields", v, place, sys, name)
	}
	for i := range tps {
		if tps[i].System != sys || tps[i].Name != name {
			continue
		}
		var cands []string
		for _, f := range tps[i].Fields() {
			if !f.Common {
				cands = append(cands, "$"+f.Name)
			}
		}
		cands = append(cands, "$comm")
		if n, ok := grammar.Closest(v, cands); ok {
			return fmt.Sprintf("%s has no field %s; did you mean %s?", place, strings.TrimPrefix(v, "$"), n)
		}
		return fmt.Sprintf("%s has no field %s; its fields are %s", place, strings.TrimPrefix(v, "$"), strings.Join(cands, ", "))
	}
	return fmt.Sprintf("no field %s in %s; events/%s/%s/format lists its fields", v, place, sys, name)
}

// WriteNeeds writes on w the features line needs beyond the model
// kernel's own syntax (events.LineNeeds), as `ktrace add` and `ktrace
// record` note them: one line, nothing when it needs none. It returns
// them.
func WriteNeeds(w io.Writer, m *kernel.Model, line string) []string {
	n := events.LineNeeds(m, line)
	if len(n) > 0 {
		fmt.Fprintf(w, "ktrace: %q needs %s\n", line, strings.Join(n, "; "))
	}
	return n
}

// Report writes on w what `ktrace add` prints for a line the write to f
// rejected with err: the error_log entry the kernel logged last, as
// error_log shows it without its timestamp, then a "hint: " line each.
func (e *Hinter) Report(w io.Writer, line string, f events.File, err error) {
	var log *events.LogEntry
	if we := (*events.WriteError)(nil); errors.As(err, &we) {
		log = we.Last()
	}
	if log != nil {
		fmt.Fprint(w, tracefs.FormatLogEntry(*log))
	}
	for _, h := range e.For(line, f, log) {
		fmt.Fprintf(w, "hint: %s\n", h)
	}
}
