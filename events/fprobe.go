package events

import (
	"strconv"
	"strings"
	"syscall"

	"github.com/ktrace-dev/ktrace/fetchargs"
	"github.com/ktrace-dev/ktrace/grammar"
)

// createFprobe is the kernel's fprobe create function (trace_fprobe) for
// one f/t line of dynamic_events, in the kernel's order of checks.
func (r *Registry) createFprobe(argv []string) createResult {
	if (argv[0][0] != 'f' && argv[0][0] != 't') || len(argv) < 2 {
		return notMine
	}
	isTP := argv[0][0] == 't'
	group := "fprobes"
	if isTP {
		group = "tracepoints"
	}
	c := &lineCtx{r: r, subsys: "trace_fprobe", argv: argv}
	head, err := grammar.ParseHead(argv[0])
	if err != nil {
		return createResult{err: err}
	}

	maxactive, res, ok := c.maxactive(head, r.dialect.FprobeMaxactive, grammar.ErrBadMaxact)
	if !ok {
		return res
	}

	parsed, err := grammar.ParseFprobePlace(argv[1])
	if err != nil {
		return createResult{err: err}
	}
	place, ge := parsed.Site(isTP, r.dialect)
	if ge != nil {
		return c.fail(ge)
	}
	isReturn := place.Return
	if !isReturn {
		// Any later token mentioning $retval (not followed by an
		// identifier character) makes this an exit probe; on a
		// tracepoint it is an error at that $retval.
		for i := 2; i < len(argv); i++ {
			j := retvalIndex(argv[i])
			if j < 0 {
				continue
			}
			if isTP {
				return c.failErrno(grammar.ErrRetvalOnProbe, i, j, syscall.EINVAL)
			}
			isReturn = true
			break
		}
	}
	if !isReturn && maxactive != 0 {
		return c.failErrno(grammar.ErrBadMaxactType, 0, 1, syscall.EINVAL)
	}

	group, event, ge := head.GroupEvent(group)
	if ge != nil {
		return c.fail(ge)
	}
	if event == "" {
		var name string
		switch {
		case isTP && len(place.Symbol) > 0 && place.Symbol[0] >= '0' && place.Symbol[0] <= '9':
			name = "_" + place.Symbol
		case isTP:
			name = place.Symbol
		case isReturn:
			name = place.Symbol + "__exit"
		default:
			name = place.Symbol + "__entry"
		}
		event = grammar.SanitizeEventName(grammar.TruncateName(name), r.dialect.SanitizeStar)
	}

	kind := Fentry
	switch {
	case isTP:
		kind = Tprobe
	case isReturn:
		kind = Fexit
	}
	ctx := &fetchargs.Context{
		Model:   r.model,
		Dialect: r.dialect,
		Kind:    fetchargs.FProbe,
		Return:  isReturn,
		Entry:   !isReturn,
		Func:    place.Symbol,
	}
	pending := false
	if isTP {
		ctx.Kind = fetchargs.TProbe
		// A known tracepoint is probed through its __probestub_ function,
		// whose BTF prototype types the arguments; an unknown one may be
		// in a module loaded later and stays pending.
		if len(r.model.Symbols("", "__tracepoint_"+place.Symbol)) > 0 {
			ctx.Func = "__probestub_" + place.Symbol
		} else {
			pending = true
		}
	}
	args, res, ok := c.parseArgs(ctx)
	if !ok {
		return res
	}

	p := &Probe{Symbol: place.Symbol, Args: args, Pending: pending}
	if i := strings.IndexByte(place.Symbol, ':'); i >= 0 && !isTP {
		p.Module = place.Symbol[:i]
	}
	if isReturn {
		p.MaxActive = maxactive
	}
	return r.registerFprobe(c, kind, group, event, p)
}

// retvalIndex returns the index of "$retval" in tok when it is not followed
// by an identifier character (the fprobe front end's exit-probe test), or -1.
func retvalIndex(tok string) int {
	i := strings.Index(tok, "$retval")
	if i < 0 {
		return -1
	}
	if j := i + len("$retval"); j < len(tok) {
		c := tok[j]
		if c == '_' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') {
			return -1
		}
	}
	return i
}

// registerFprobe is register_trace_fprobe plus the create function's
// error mapping.
func (r *Registry) registerFprobe(c *lineCtx, kind Kind, group, name string, p *Probe) createResult {
	old := r.findEvent(group, name)
	if (old != nil && !old.Kind.isFprobe()) || isStaticEvent(r.dialect.Name, group, name) {
		return c.failErrno(grammar.ErrEventExist, 0, 0, syscall.EEXIST)
	}
	if old != nil {
		if old.Kind != kind {
			return c.failErrno(grammar.ErrDiffProbeType, 0, 0, syscall.EEXIST)
		}
		if res, ok := c.checkAppend(old, p, func(q *Probe) bool { return q.Symbol == p.Symbol }); !ok {
			return res
		}
	}
	// __register_trace_fprobe resolves @SYM arguments first.
	if errno := resolveArgSymbols(r, p.Args); errno != 0 {
		return c.fail(regError(errno))
	}
	switch {
	case kind != Tprobe:
		// ftrace_set_filter must find a function for the filter.
		if code, errno := r.model.CheckFprobe(p.Symbol); errno != 0 {
			return c.failErrno(code, 1, 0, errno)
		}
		// A wrapped, negative maxactive (see ParseMaxactive) makes the
		// fprobe's rethook pool fail to allocate (6.12).
		if kind == Fexit && p.MaxActive < 0 {
			return c.failErrno(grammar.ErrFailRegProbe, 1, 0, syscall.EINVAL)
		}
	case !p.Pending:
		// A tracepoint is probed in two steps: its probe stub is
		// registered on the tracepoint (EEXIST, logged by nobody, when
		// it already is: one t probe per tracepoint), then an fprobe is
		// put on the stub, which must be traceable (6.12 builds some
		// stubs without an ftrace location: "t error_report_end" fails
		// to register, and its stub stays registered).
		if r.tpStubs[p.Symbol] {
			return createResult{err: &WriteError{Errno: syscall.EEXIST}}
		}
		if r.tpStubs == nil {
			r.tpStubs = map[string]bool{}
		}
		r.tpStubs[p.Symbol] = true
		if code, errno := r.model.CheckFprobe("__probestub_" + p.Symbol); errno != 0 {
			return c.failErrno(code, 1, 0, errno)
		}
	}
	p.Line = fprobeLine(kind, group, name, p)
	r.addProbe(old, group, name, kind, p)
	return createResult{}
}

// fprobeLine is the fprobe readback line (trace_fprobe_show).
func fprobeLine(kind Kind, group, name string, p *Probe) string {
	b := make([]byte, 0, 64)
	if kind == Tprobe {
		b = append(b, 't')
	} else {
		b = append(b, 'f')
	}
	if kind == Fexit && p.MaxActive != 0 {
		b = strconv.AppendInt(b, int64(p.MaxActive), 10)
	}
	b = append(b, ':')
	b = append(b, group...)
	b = append(b, '/')
	b = append(b, name...)
	b = append(b, ' ')
	b = append(b, p.Symbol...)
	if kind == Fexit {
		b = append(b, "%return"...)
	}
	return string(appendArgs(b, p.Args))
}
