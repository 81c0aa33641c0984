package fetchargs

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"syscall"

	"github.com/cilium/ebpf/btf"

	"github.com/ktrace-dev/ktrace/grammar"
)

// Limits of the kernel's argument parser.
const (
	maxTraceArgs   = 128 // MAX_TRACE_ARGS
	maxArgNameLen  = 32  // MAX_ARG_NAME_LEN
	maxArrayLen    = 64  // MAX_ARRAY_LEN
	maxBTFArgsLen  = 128 // MAX_BTF_ARGS_LEN: buffer for $arg*/$argN expansion
	maxDentryArgsL = 256 // MAX_DENTRY_ARGS_LEN: buffer for %pd/%pD rewriting
)

var (
	errNoFunc  = errors.New("address probe has no function for BTF")
	errNoModel = errors.New("no kernel model")
	// errNoBTFArgs: the kernel has no BTF argument support compiled in.
	errNoBTFArgs = errors.New("kernel without BTF argument support")
)

// reservedNames are field names every probe event already has.
var reservedNames = []string{
	"common_type", "common_flags", "common_preempt_count", "common_pid",
	"common_tgid", "__probe_ip", "__probe_ret_ip", "__probe_func",
}

// isGoodName is the kernel's is_good_name: a C identifier.
func isGoodName(s string) bool {
	if s == "" || !(isAlpha(s[0]) || s[0] == '_') {
		return false
	}
	for i := 1; i < len(s); i++ {
		if !(isAlpha(s[i]) || isDigit(s[i]) || s[i] == '_') {
			return false
		}
	}
	return true
}

// parser is the state of one traceprobe_parse_probe_arg call.
type parser struct {
	c      *Context
	r      rules
	flags  uint
	lg     logger
	text   string // the argument token
	offset int    // ctx->offset: caret base inside the token
	prog   *program
	prev   []*Arg

	lastType    btf.Type // BTF type of the value fetched so far (nil: none)
	lastBitoffs uint32
	lastBitsize uint32
}

func (p *parser) log(off int, c grammar.Code) { p.lg.log(off, c) }

// fileOffsTwice reports whether the kernel that runs the probe (the
// model's release, else the dialect's) reads @+OFFS at twice the offset:
// releases from 6.5 on.
func (p *parser) fileOffsTwice() bool {
	if m := p.c.Model; m != nil {
		if major, _, _ := m.KernelVersion(); major != 0 {
			return m.AtLeast(6, 5)
		}
	}
	return p.r.newParser // the dialect's release is 6.5 or newer
}

// Parse parses and type-checks one argument token (the kernel's
// traceprobe_parse_probe_arg): index is its position in the expanded
// argument list and prev the arguments already accepted for this probe.
// The token is parsed by the grammar (grammar.ParseArgument); the checks
// here run over its tree in the kernel's order. Errors are *grammar.Error
// (or *LogError when several error_log entries are written) attributed to
// tok.LogIndex.
func Parse(ctx *Context, tok Token, index int, prev []*Arg) (*Arg, error) {
	if ctx == nil || ctx.Model == nil || ctx.Model.Arch() == nil {
		return nil, fmt.Errorf("fetchargs: parsing %q: %w", tok.Text, errNoModel)
	}
	tree, err := grammar.ParseArgument(tok.Text)
	if err != nil {
		return nil, fmt.Errorf("fetchargs: %w", err)
	}
	p := &parser{c: ctx, r: ctx.rulesOf(), flags: ctx.flags(), prev: prev, text: tok.Text}
	ctx.prevIdx.update(prev)
	p.lg.index = tok.LogIndex
	a, errno := p.parseArg(tree, index)
	if p.prog != nil {
		// The argument holds a copy of the ops (program.ops).
		putProgram(p.prog)
		p.prog = nil
	}
	if errno != 0 {
		pending := ctx.pending
		ctx.pending = nil
		return nil, result(pending, p.lg.entries, tok.LogIndex, errno)
	}
	if len(p.lg.entries) > 0 {
		// Logged but accepted cannot happen in the kernel's argument
		// parser; keep the entries so nothing is lost.
		ctx.pending = append(ctx.pending, p.lg.entries...)
	}
	return a, nil
}

// fetchEnd is the end of the fetch part of the argument: its ':' or the
// end of the text.
func (p *parser) fetchEnd(t *grammar.Argument) int {
	if t.Type != nil {
		return t.Type.Colon.Pos.Offset
	}
	return len(p.text)
}

// parseArg is traceprobe_parse_probe_arg: the name part, then the body.
func (p *parser) parseArg(t *grammar.Argument, index int) (*Arg, syscall.Errno) {
	var name string
	body := 0
	if t.Name != nil {
		eq := t.Name.Eq.Pos.Offset
		if eq > maxArgNameLen {
			p.log(0, grammar.ErrArgNameTooLong)
			return nil, syscall.EINVAL
		}
		if eq == 0 {
			p.log(0, grammar.ErrNoArgName)
			return nil, syscall.EINVAL
		}
		name = t.Name.Name.Value
		body = eq + 1
	} else {
		name = p.generateName(p.text[:p.fetchEnd(t)], index)
	}
	p.offset = body
	if !isGoodName(name) {
		p.log(0, grammar.ErrBadArgName)
		return nil, syscall.EINVAL
	}
	for _, r := range reservedNames {
		if r == name {
			p.log(0, grammar.ErrUsedArgName)
			return nil, syscall.EINVAL
		}
	}
	if p.c.prevIdx.hasName(name) {
		p.log(0, grammar.ErrUsedArgName)
		return nil, syscall.EINVAL
	}
	a, errno := p.parseBody(t, body)
	if errno != 0 {
		return nil, errno
	}
	a.Name = name
	return a, 0
}

// generateName names an argument given without "name=": its fetch part
// (the text up to the first ':') when that is an identifier (BTF-capable
// kernels), else "arg<index+1>".
func (p *parser) generateName(fetch string, index int) string {
	if p.r.btfArgs && isGoodName(fetch) {
		return fetch
	}
	return "arg" + strconv.Itoa(index+1)
}

// parseBody is traceprobe_parse_probe_arg_body; body is the offset of the
// text after "name=".
func (p *parser) parseBody(t *grammar.Argument, body int) (*Arg, syscall.Errno) {
	text := p.text[body:]
	if len(text) > p.r.maxArgStrLen {
		p.log(p.offset, grammar.ErrArgTooLong)
		return nil, p.r.argTooLongErrno
	} else if text == "" {
		p.log(p.offset, grammar.ErrNoArgBody)
		return nil, syscall.EINVAL
	}
	bodyOffset := p.offset
	a := &Arg{Body: text}

	// The type: after the first ':', with an array count after '['.
	hasType := t.Type != nil
	typeName, typeOffset := "", 0
	var typ *grammar.Type
	if hasType {
		colon := t.Type.Colon.Pos.Offset
		typ = t.Type.Type
		typeOffset = colon + 1 - body
		typeName = p.text[colon+1:]
		if typ != nil && typ.Array != nil {
			arr := typ.Array
			typeName = p.text[colon+1 : arr.Pos.Offset]
			count := arr.Pos.Offset + 1
			if arr.Close.Value == "" {
				p.log(len(p.text), grammar.ErrArrayNoClose)
				return nil, syscall.EINVAL
			}
			if arr.Trail.Value != "" {
				p.log(arr.Close.Pos.Offset+1, grammar.ErrBadArraySuffix)
				return nil, syscall.EINVAL
			}
			n, e := kstrtouint(arr.Count.Value, 0)
			if e != 0 || n == 0 {
				p.log(count, grammar.ErrBadArrayNum)
				return nil, syscall.EINVAL
			}
			if n > maxArrayLen {
				p.log(count, grammar.ErrArrayTooBig)
				return nil, syscall.EINVAL
			}
			a.Count = int(n)
		}
	}
	a.TypeName = typeName

	// $comm and immediate strings can only be strings.
	f := t.Fetch
	fetch := p.text[body:p.fetchEnd(t)]
	if p.flags&flTevent == 0 && (fetch == "$comm" || fetch == "$COMM" || (f != nil && f.ImmStr != nil)) {
		if a.Count > 0 || (hasType && typeName != "string") {
			if p.r.needStringLog {
				p.log(p.offset+typeOffset, grammar.ErrNeedStringType)
			}
			return nil, syscall.EINVAL
		}
		a.Type = findType("string", p.r)
	} else {
		a.Type = findTypeOf(typ, typeName, hasType, p.r)
		// Since 6.2 the symbol types are for kernel probes only.
		if p.flags&flKernel == 0 && p.r.newParser && (typeName == "symbol" || typeName == "symstr") {
			a.Type = nil
		}
	}
	if a.Type == nil {
		p.log(p.offset+typeOffset, grammar.ErrBadType)
		return nil, syscall.EINVAL
	}

	// Kernels before the BTF rework account the record size before
	// parsing the fetch part.
	if !p.r.stickyOffset {
		if errno := p.checkEventSize(a); errno != 0 {
			return nil, errno
		}
	}

	if p.prog != nil {
		putProgram(p.prog)
	}
	p.prog = getProgram()
	pc := 0
	p.lastType = nil
	if errno := p.parseProbeArg(f, p.fetchEnd(t), &pc); errno != 0 {
		return nil, errno
	}
	if !p.r.stickyOffset {
		p.offset = bodyOffset
	}

	// Adopt the BTF type, or prepare a BTF value for a string type.
	if p.r.btfArgs && p.lastType != nil {
		if !hasType {
			a.Type = findTypeOpt(p.btfTypeName(p.lastType), true, p.r)
			if a.Type == nil {
				a.Type = findType(defaultType, p.r)
			}
		} else if strings.Contains(typeName, "string") {
			if errno := p.prepareBTFString(typeName, &pc); errno != 0 {
				return nil, errno
			}
		}
	}
	if p.r.stickyOffset {
		if errno := p.checkEventSize(a); errno != 0 {
			return nil, errno
		}
	}
	a.Size = a.Type.Size
	if a.Count > 0 {
		a.Size *= a.Count
	}
	var bf *grammar.Bitfield
	if typ != nil {
		bf = typ.Bitfield
	}
	if errno := p.finalize(&pc, a, bf, hasType, typeOffset); errno != 0 {
		return nil, errno
	}
	a.Ops = p.prog.ops()
	a.Dynamic = a.Type.IsString
	return a, 0
}

// maxProbeEventSize is MAX_PROBE_EVENT_SIZE: the fixed part of a probe
// record (the sum of the argument sizes) may not exceed it. Both pinned
// kernels carry this check (a stable backport).
const maxProbeEventSize = 3072

// checkEventSize fails with EVENT_TOO_BIG when this argument would make
// the record's fixed part larger than maxProbeEventSize.
func (p *parser) checkEventSize(a *Arg) syscall.Errno {
	size := p.c.prevIdx.size
	n := a.Type.Size
	if a.Count > 0 {
		n *= a.Count
	}
	if size+n > maxProbeEventSize {
		p.log(p.offset, grammar.ErrEventTooBig)
		return syscall.E2BIG
	}
	return 0
}

// findTypeOpt distinguishes "no type given" (default type) from an empty
// type after ':' (unknown).
func findTypeOpt(name string, has bool, r rules) *Type {
	if has && name == "" {
		return nil
	}
	return findType(name, r)
}

// findTypeOf is find_fetch_type for the parsed type of an argument: a
// bitfield resolves to u8/u16/u32/u64 by its container size, parsed like
// kstrtoul(…, 0).
func findTypeOf(t *grammar.Type, name string, has bool, r rules) *Type {
	if t == nil || t.Bitfield == nil {
		return findTypeOpt(name, has, r)
	}
	bf := t.Bitfield
	if bf.Slash.Value == "" {
		return nil
	}
	bs, e := kstrtoul(bf.Container.Value, 0)
	if e != 0 {
		return nil
	}
	switch bs {
	case 8:
		return findType("u8", r)
	case 16:
		return findType("u16", r)
	case 32:
		return findType("u32", r)
	case 64:
		return findType("u64", r)
	}
	return nil
}

// parseProbeArg is the kernel's recursive parse_probe_arg over one parsed
// fetch form (nil for an empty one) whose text ends at end; pc indexes the
// current instruction.
func (p *parser) parseProbeArg(f *grammar.FetchArg, end int, pc *int) syscall.Errno {
	ins := &p.prog.ins
	code := *pc
	var ret syscall.Errno
	switch {
	case f == nil:
	case f.Var != nil:
		ret = p.parseProbeVars(f, end, pc)
	case f.Reg != nil:
		if p.flags&(flTevent|flFprobe) != 0 {
			// fprobes have no registers: logged, then reported again
			// below as an unparsed argument.
			p.log(p.offset, grammar.ErrBadVar)
			break
		}
		off, ok := p.c.Model.Arch().RegOffset(f.Reg.Name.Value)
		if !ok {
			p.log(p.offset, grammar.ErrBadRegName)
			return syscall.EINVAL
		}
		ins[code] = Op{Code: OpReg, Param: uint32(off)}
	case f.Mem != nil:
		m := f.Mem
		var derefOff int64
		switch {
		case m.Addr.Value != "":
			v, e := kstrtoul(m.Addr.Value, 0)
			if e != 0 {
				p.log(p.offset, grammar.ErrBadMemAddr)
				return e
			}
			ins[code] = Op{Code: OpImm, Imm: v}
		case m.File != nil:
			if p.flags&flKernel != 0 {
				p.log(p.offset, grammar.ErrFileOnKprobe)
				return syscall.EINVAL
			}
			v, e := kstrtol(m.File.Offs.Value, 0)
			if e != 0 {
				p.log(p.offset, grammar.ErrBadFileOffs)
				return e
			}
			ins[code] = Op{Code: OpFOffs, Imm: uint64(v)}
			// The parser of the 6.5 rework reuses the file offset as
			// the offset of the dereference that follows, reading at
			// base + 2*OFFS (6.12.95 does; 6.1.192 reads at base +
			// OFFS; checked in the VM with "f=@+0x10:u64" beside
			// "@BASE+0x10" and "@BASE+0x20"). What is read is the
			// running kernel's doing, whatever syntax the line is
			// read with.
			if p.fileOffsTwice() {
				derefOff = v
			}
		default:
			if p.flags&flKernel == 0 {
				p.log(p.offset, grammar.ErrSymOnUprobe)
				return syscall.EINVAL
			}
			// The symbol and its offset are resolved when the probe
			// is registered (ResolveSymbols); Param is where the
			// offset starts in Data.
			ins[code] = Op{Code: OpNopSymbol, Data: m.Symbol.Value + m.Offset.Value, Param: uint32(len(m.Symbol.Value))}
			code++
			if code == progEnd {
				p.log(p.offset, grammar.ErrTooManyOps)
				return syscall.EINVAL
			}
			ins[code] = Op{Code: OpImm}
		}
		code++
		if code == progEnd {
			p.log(p.offset, grammar.ErrTooManyOps)
			return syscall.EINVAL
		}
		*pc = code
		ins[code] = Op{Code: OpDeref, Offset: derefOff}
	case f.Deref != nil:
		return p.parseDeref(f.Deref, pc)
	case f.ImmStr != nil:
		s := f.ImmStr.Text.Value
		if s == "" || s[len(s)-1] != '"' {
			p.log(p.offset+2+len(s), grammar.ErrImmstrNoClose)
			return syscall.EINVAL
		}
		ins[code] = Op{Code: OpData, Data: s[:len(s)-1]}
	case f.Imm != nil:
		v, e := strToImmediate(f.Imm.Value.Value)
		if e != 0 {
			p.log(p.offset+1, grammar.ErrBadImm)
			ret = e
		} else {
			ins[code] = Op{Code: OpImm, Imm: v}
		}
	case f.BTF != nil:
		if !p.r.newParser {
			break
		}
		if !isFunctionEntry(p.flags) && !isFunctionReturn(p.flags) {
			p.log(p.offset, grammar.ErrNosupBTFArg)
			return syscall.EINVAL
		}
		if !p.r.btfArgs {
			p.log(p.offset, grammar.ErrNosupBTFArg)
			return syscall.EOPNOTSUPP
		}
		ret = p.parseBTFArg(f.BTF, "", f.Pos.Offset, pc)
	}
	if ret == 0 && ins[code].Code == OpNop {
		p.log(p.offset, grammar.ErrBadFetchArg)
		ret = syscall.EINVAL
	}
	return ret
}

// parseDeref handles "+OFFS(…)", "-OFFS(…)" and the user-memory forms
// "+uOFFS(…)", "-uOFFS(…)", including the kernel's caret bookkeeping that
// is one column short for the 'u' forms and for "+-OFFS(".
func (p *parser) parseDeref(d *grammar.Deref, pc *int) syscall.Errno {
	ins := &p.prog.ins
	deref := OpDeref
	if d.User.Value != "" {
		deref = OpUDeref
	}
	// The kernel drops the 'u' and a leading '+', and reads the offset
	// with kstrtol up to the '('.
	num := d.Offs.Value
	if d.Sign.Value == "-" {
		num = "-" + num
	}
	if d.Open.Value == "" {
		p.log(p.offset, grammar.ErrDerefNeedBrace)
		return syscall.EINVAL
	}
	off, e := kstrtol(num, 0)
	if e != 0 {
		p.log(p.offset, grammar.ErrBadDerefOffs)
		return e
	}
	adv := len(num) + 1
	if num == "" || num[0] != '-' {
		adv++
	}
	p.offset += adv
	if d.Close.Value == "" {
		p.log(p.offset+len(d.Unclosed.Value), grammar.ErrDerefOpenBrace)
		return syscall.EINVAL
	}
	cur := p.offset
	code := *pc
	if errno := p.parseProbeArg(d.Inner, d.Close.Pos.Offset, &code); errno != 0 {
		return errno
	}
	p.offset = cur
	if ins[code].Code == OpComm || ins[code].Code == OpData {
		p.log(p.offset, grammar.ErrCommCantDeref)
		return syscall.EINVAL
	}
	code++
	if code == progEnd {
		p.log(p.offset, grammar.ErrTooManyOps)
		return syscall.EINVAL
	}
	*pc = code
	ins[code] = Op{Code: deref, Offset: off}
	p.lastType = nil
	return 0
}

// strToImmediate is the kernel's str_to_immediate for "\IMM".
func strToImmediate(s string) (uint64, syscall.Errno) {
	switch {
	case s != "" && isDigit(s[0]):
		return kstrtoul(s, 0)
	case s != "" && s[0] == '-':
		v, e := kstrtol(s, 0)
		return uint64(v), e
	case s != "" && s[0] == '+':
		v, e := kstrtol(s[1:], 0)
		return uint64(v), e
	}
	return 0, syscall.EINVAL
}

// parseProbeVars parses "$…" variables: which variable the text after
// '$' names is decided by the kernel's prefix tests, in its order.
func (p *parser) parseProbeVars(f *grammar.FetchArg, end int, pc *int) syscall.Errno {
	ins := &p.prog.ins
	code := *pc
	arg := p.text[f.Pos.Offset+1 : end]
	errCode := grammar.ErrBadVar
	maxStack := p.c.paramMaxStack()

	if p.flags&flTevent != 0 {
		if !p.r.newParser {
			// 6.1 keeps the name and resolves it once the argument
			// is parsed (ResolveEventField).
			ins[code] = Op{Code: OpTPArg, Data: arg, Param: unresolvedField}
			return 0
		}
		if i := p.c.fieldIndex(arg); i >= 0 {
			ins[code] = Op{Code: OpTPArg, Data: arg, Param: uint32(i)}
			return 0
		}
		if arg == "comm" || arg == "COMM" {
			ins[code] = Op{Code: OpComm}
			return 0
		}
		// The caret stays at the variable (checked in the 6.12 guest:
		// "x=+0($nosuch)" points at the '$').
		goto inval
	}

	if p.r.newParser {
		if strings.HasPrefix(arg, "retval") {
			if p.flags&flReturn == 0 {
				p.log(p.offset, grammar.ErrRetvalOnProbe)
				return syscall.EINVAL
			}
			if !p.r.btfArgs || p.flags&flKernel == 0 {
				// Without BTF (or on a uprobe) any "$retval…" is the
				// raw return value.
				ins[code] = Op{Code: OpRetval}
				return 0
			}
			return p.parseBTFArg(f.Var.Name, "$", f.Pos.Offset, pc)
		}
	} else if arg == "retval" {
		if p.flags&flReturn == 0 {
			p.log(p.offset, grammar.ErrRetvalOnProbe)
			return syscall.EINVAL
		}
		ins[code] = Op{Code: OpRetval}
		return 0
	}

	if rest, ok := strings.CutPrefix(arg, "stack"); ok {
		if rest == "" {
			ins[code] = Op{Code: OpStackP}
			return 0
		}
		if isDigit(rest[0]) {
			n, e := kstrtoul(rest, 10)
			if e != 0 {
				goto inval
			}
			if p.flags&flKernel != 0 && n > maxStack {
				errCode = grammar.ErrBadStackNum
				goto inval
			}
			ins[code] = Op{Code: OpStack, Param: uint32(n)}
			return 0
		}
		goto inval
	}

	if arg == "comm" || arg == "COMM" {
		ins[code] = Op{Code: OpComm}
		return 0
	}

	if rest, ok := strings.CutPrefix(arg, "arg"); ok {
		if !p.r.argAnywhere && p.flags&(flReturn|flKernel|flFentry) != flKernel|flFentry {
			goto inval
		}
		n, e := kstrtoul(rest, 10)
		if e != 0 {
			goto inval
		}
		if n == 0 || n > maxStack {
			errCode = grammar.ErrBadArgNum
			goto inval
		}
		n--
		switch {
		case !p.r.argAnywhere || isFunctionEntry(p.flags):
			if p.flags&flTpoint != 0 {
				n++
			}
			ins[code] = Op{Code: OpArg, Param: uint32(n)}
		case isFunctionReturn(p.flags):
			ins[code] = Op{Code: OpEData, Param: uint32(n), Offset: p.storeEntryArg(int(n))}
		default:
			errCode = grammar.ErrNofentryArgs
			goto inval
		}
		return 0
	}

inval:
	p.log(p.offset, errCode)
	return syscall.EINVAL
}

// storeEntryArg returns the entry-data offset of function argument n for a
// return probe: arguments get 8-byte slots in order of first use across
// the probe's arguments (__store_entry_arg).
func (p *parser) storeEntryArg(n int) int64 {
	slots := EntryArgs(p.prev)
	for i, s := range slots {
		if s == n {
			return int64(8 * i)
		}
	}
	return int64(8 * len(slots))
}

// unresolvedField marks an event probe's $FIELD that 6.1 resolves after
// parsing the argument.
const unresolvedField = ^uint32(0)

// fieldIndex is the index of the attached event's field name, or -1.
func (c *Context) fieldIndex(name string) int {
	for i := range c.Fields {
		if c.Fields[i].Name == name {
			return i
		}
	}
	return -1
}

// ResolveEventField is 6.1's second step for an event probe's argument
// (trace_eprobe_tp_arg_update): a $NAME kept by the parser becomes the
// attached event's field of that name, or else, for comm and COMM, the
// task's comm. It reports false when neither fits (BAD_ATTACH_ARG).
func ResolveEventField(ctx *Context, a *Arg) bool {
	if len(a.Ops) == 0 || a.Ops[0].Code != OpTPArg || a.Ops[0].Param != unresolvedField {
		return true
	}
	name := a.Ops[0].Data
	if i := ctx.fieldIndex(name); i >= 0 {
		a.Ops[0].Param = uint32(i)
		return true
	}
	if name == "comm" || name == "COMM" {
		a.Ops[0] = Op{Code: OpComm}
		return true
	}
	return false
}
