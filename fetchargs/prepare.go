package fetchargs

import (
	"fmt"
	"strings"
	"syscall"

	"github.com/cilium/ebpf/btf"

	"github.com/ktrace-dev/ktrace/grammar"
)

// Token is one argument to parse: its text after the whole-line passes
// and the argv index error_log entries for it are attributed to. After
// $arg* expansion that index is the token's position in the expanded list
// (plus 2), which may not match the logged command (Linux does the same).
type Token struct {
	Text     string
	LogIndex int
}

// PrepareArgs runs the whole-line passes Linux applies to a probe's
// arguments before parsing them one by one: $arg*/$argN expansion from BTF
// (traceprobe_expand_meta_args), the MAX_TRACE_ARGS limit, and %pd/%pD
// rewriting (traceprobe_expand_dentry_args). argv is the whole line's argv
// (argv[0] the probe type and name, argv[1] the place). It returns the
// tokens to parse. Errors are *grammar.Error (or *LogError); a Code of
// grammar.ErrNone means the write fails without an error_log entry.
func PrepareArgs(ctx *Context, argv []string) ([]Token, error) {
	if ctx == nil {
		return nil, fmt.Errorf("fetchargs: preparing arguments: %w", errNoModel)
	}
	r := ctx.rulesOf()
	ctx.pending = nil
	ctx.logRewrites = nil
	var args []string
	if len(argv) > 2 {
		args = argv[2:]
	}
	var toks []Token
	expanded := false
	if r.newParser && ctx.Kind != UProbe {
		var lg logger
		var errno syscall.Errno
		toks, expanded, errno = expandMetaArgs(ctx, args, &lg)
		if errno != 0 {
			return nil, result(nil, lg.entries, lg.index, errno)
		}
		ctx.pending = append(ctx.pending, lg.entries...)
	} else {
		toks = make([]Token, len(args))
		for i, a := range args {
			toks[i] = Token{Text: a, LogIndex: i + 2}
		}
	}
	if len(toks) > maxTraceArgs {
		if r.tooManyArgsE2BIG {
			pending := ctx.pending
			ctx.pending = nil
			return nil, result(pending, nil, 2, syscall.E2BIG)
		}
		toks = toks[:maxTraceArgs]
	}
	// Only the kernel probes rewrite %pd/%pD (uprobes leave the type
	// as written, which no fetch type matches).
	if r.dentryArgs && ctx.Kind != UProbe {
		orig := make([]string, len(toks))
		for i, t := range toks {
			orig[i] = t.Text
		}
		if err := expandDentryArgs(ctx, toks); err != nil {
			return nil, err
		}
		if !expanded {
			for i, t := range toks {
				if t.Text != orig[i] {
					if ctx.logRewrites == nil {
						ctx.logRewrites = map[int]string{}
					}
					ctx.logRewrites[t.LogIndex] = t.Text
				}
			}
		}
	}
	return toks, nil
}

// expandMetaArgs is traceprobe_expand_meta_args: with BTF for the probed
// function, "$arg*" becomes one token per parameter and a bare "$argN[:T]"
// becomes "<param>[:T]". Without usable BTF only "$arg*" complains, and
// then without failing (the token fails again when parsed).
func expandMetaArgs(ctx *Context, args []string, lg *logger) ([]Token, bool, syscall.Errno) {
	flags := ctx.flags()
	argsIdx := -1
	found := false
	for i, a := range args {
		if !strings.HasPrefix(a, "$arg") {
			continue
		}
		lg.index = i + 2
		if !isFunctionEntry(flags) && !isFunctionReturn(flags) {
			lg.log(0, grammar.ErrNofentryArgs)
			return nil, false, syscall.EINVAL
		}
		if len(a) > 4 && isDigit(a[4]) {
			found = true
			continue
		}
		if len(a) == 4 || a[4] != '*' {
			lg.log(0, grammar.ErrBadVar)
			return nil, false, syscall.EINVAL
		}
		if argsIdx >= 0 {
			lg.log(0, grammar.ErrDoubleArgs)
			return nil, false, syscall.EINVAL
		}
		found = true
		argsIdx = i
	}
	plain := func() []Token {
		t := make([]Token, len(args))
		for i, a := range args {
			t[i] = Token{Text: a, LogIndex: i + 2}
		}
		return t
	}
	if !found {
		return plain(), false, 0
	}
	if !ctx.queryBTF() || len(ctx.params) == 0 {
		if argsIdx != -1 {
			lg.log(0, grammar.ErrNosupBTFArg)
		}
		return plain(), false, 0
	}
	var out []string
	used := 0
	add := func(s string) syscall.Errno {
		if len(s) >= maxBTFArgsLen-used {
			lg.log(0, grammar.ErrArgs2Long)
			return syscall.E2BIG
		}
		out = append(out, s)
		used += len(s) + 1
		return 0
	}
	nth := func(idx int, typ string) syscall.Errno {
		if idx >= len(ctx.params) {
			lg.log(0, grammar.ErrNoBTFArg)
			return syscall.ENOENT
		}
		if idx < 0 {
			// Linux reads before its parameter array here. A
			// tracepoint's array starts after the stub's hidden first
			// parameter, so $arg0 names that one (and then fails as an
			// unknown variable); elsewhere, on the pinned kernels, it
			// finds no name.
			if idx == -1 && ctx.Kind == TProbe && ctx.proto != nil && len(ctx.proto.Params) > 0 {
				return add(ctx.proto.Params[0].Name + typ)
			}
			lg.log(0, grammar.ErrNoBTFEntry)
			return syscall.ENOENT
		}
		// A variadic function's last "parameter" has an empty name: it
		// expands to an empty token, which fails later as NO_ARG_BODY.
		return add(ctx.params[idx].Name + typ)
	}
	for i, a := range args {
		lg.index = i + 2
		switch {
		case i == argsIdx:
			for n := range ctx.params {
				if e := nth(n, ""); e != 0 {
					return nil, false, e
				}
			}
		case strings.HasPrefix(a, "$arg"):
			v, typ := simpleStrtoul(a[4:], 10)
			if typ != "" && typ[0] != ':' {
				lg.log(0, grammar.ErrBadVar)
				return nil, false, syscall.ENOENT
			}
			// The kernel keeps the number in an int.
			n := int(int32(uint32(v)))
			if e := nth(n-1, typ); e != 0 {
				return nil, false, e
			}
		default:
			out = append(out, a)
		}
	}
	toks := make([]Token, len(out))
	for j, s := range out {
		toks[j] = Token{Text: s, LogIndex: j + 2}
	}
	return toks, true, 0
}

// expandDentryArgs is traceprobe_expand_dentry_args: "X:%pd" becomes
// "+0x0(+0x<d_name.name>(X)):string" and "X:%pD" goes one level further
// through file->f_path.dentry, with the offsets of this kernel's structs.
func expandDentryArgs(ctx *Context, toks []Token) error {
	used := 0
	for i := range toks {
		a := toks[i].Text
		if len(a) < 4 || !(strings.HasSuffix(a, ":%pd") || strings.HasSuffix(a, ":%pD")) {
			continue
		}
		nameOff, err := memberOffset(ctx, "dentry", "d_name", "name")
		if err != nil {
			return fmt.Errorf("fetchargs: rewriting %q: %w", a, err)
		}
		prefix, body := "", a[:len(a)-4]
		if eq := strings.IndexByte(a, '='); eq >= 0 && eq < len(a)-4 {
			prefix, body = a[:eq+1], a[eq+1:len(a)-4]
		}
		var s string
		if a[len(a)-1] == 'd' {
			s = fmt.Sprintf("%s+0x0(+0x%x(%s)):string", prefix, nameOff, body)
		} else {
			dentOff, err := memberOffset(ctx, "file", "f_path", "dentry")
			if err != nil {
				return fmt.Errorf("fetchargs: rewriting %q: %w", a, err)
			}
			s = fmt.Sprintf("%s+0x0(+0x%x(+0x%x(%s))):string", prefix, nameOff, dentOff, body)
		}
		if len(s) >= maxDentryArgsL-used {
			return &grammar.Error{Code: grammar.ErrNone, Arg: toks[i].LogIndex, Errno: syscall.ENOMEM}
		}
		used += len(s) + 1
		toks[i].Text = s
	}
	return nil
}

// memberOffset returns the byte offset of a member path inside a struct
// of this kernel's BTF, e.g. ("dentry", "d_name", "name").
func memberOffset(ctx *Context, strct string, path ...string) (uint32, error) {
	spec := ctx.spec()
	if spec == nil {
		return 0, fmt.Errorf("struct %s: kernel has no BTF", strct)
	}
	var s *btf.Struct
	if err := spec.TypeByName(strct, &s); err != nil {
		return 0, fmt.Errorf("struct %s: %w", strct, err)
	}
	var t btf.Type = s
	var off uint32
	for _, name := range path {
		m, anon, ok := findMember(t, name)
		if !ok || m == nil {
			return 0, fmt.Errorf("struct %s: member %s not found", strct, strings.Join(path, "."))
		}
		off += anon + uint32(m.Offset)
		t = btf.UnderlyingType(m.Type)
	}
	return off / 8, nil
}
