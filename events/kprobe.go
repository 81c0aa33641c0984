package events

import (
	"errors"
	"fmt"
	"strconv"
	"syscall"

	"github.com/ktrace-dev/ktrace/fetchargs"
	"github.com/ktrace-dev/ktrace/grammar"
	"github.com/ktrace-dev/ktrace/kernel"
)

// createResult is the outcome of one front end's create function: cancel
// means "not mine" (the kernel's -ECANCELED: try the next front end, or
// EINVAL without a log when none is left); otherwise err is nil on success.
type createResult struct {
	cancel bool
	err    error
}

var notMine = createResult{cancel: true}

// lineCtx carries what the kernel's trace_probe_log holds while one
// command is parsed: the subsystem and argv for error_log entries.
type lineCtx struct {
	r      *Registry
	subsys string
	argv   []string
}

// fail builds the write error for a logged failure: the error_log entry
// for ge and the errno (ge.Errno, or EINVAL when unset).
func (c *lineCtx) fail(ge *grammar.Error) createResult {
	errno := ge.Errno
	if errno == 0 {
		errno = syscall.EINVAL
	}
	we := &WriteError{Errno: errno, Logs: []LogEntry{*c.entry(ge)}}
	return createResult{err: we}
}

// failErrno is a logged failure with an explicit errno.
func (c *lineCtx) failErrno(code grammar.Code, arg, off int, errno syscall.Errno) createResult {
	return c.fail(&grammar.Error{Code: code, Arg: arg, Off: off, Errno: errno})
}

// maxactive is the create functions' MAXACTIVE step: 0 without one;
// where the probe kind takes none (takes false), a logged failure with
// code refused at argv[0] offset 1; otherwise the number the head holds.
func (c *lineCtx) maxactive(head *grammar.Head, takes bool, refused grammar.Code) (int, createResult, bool) {
	if !head.HasMaxactive() {
		return 0, createResult{}, true
	}
	if !takes {
		return 0, c.failErrno(refused, 0, 1, syscall.EINVAL), false
	}
	n, ge := head.ParseMaxactive()
	if ge != nil {
		return 0, c.fail(ge), false
	}
	return n, createResult{}, true
}

func (c *lineCtx) entry(ge *grammar.Error) *LogEntry {
	return &LogEntry{
		Subsys: c.subsys,
		Msg:    c.r.dialect.Message(ge.Code),
		Cmd:    grammar.Command(c.argv),
		Pos:    ge.Pos(c.argv),
	}
}

// argError converts an error from the fetch-argument layer: every
// error_log entry it carries is logged (Linux sometimes logs twice for one
// argument before failing), against the argv as the kernel's log shows it
// after %pd/%pD rewriting; an error without entries fails the write
// without a log (the kernel's -E2BIG for too many arguments, for example).
func (c *lineCtx) argError(ctx *fetchargs.Context, err error) createResult {
	entries, errno := fetchargs.Logs(err)
	if errno == 0 {
		var n syscall.Errno
		if !errors.As(err, &n) {
			n = syscall.EINVAL
		}
		errno = n
	}
	we := &WriteError{Errno: errno}
	if len(entries) > 0 {
		logged := &lineCtx{r: c.r, subsys: c.subsys, argv: ctx.LoggedArgv(c.argv)}
		for _, ge := range entries {
			we.Logs = append(we.Logs, *logged.entry(ge))
		}
	}
	return createResult{err: we}
}

// createKprobe is the kernel's kprobe create function (trace_kprobe) for
// one p/r line, check for check in the kernel's order.
func (r *Registry) createKprobe(argv []string) createResult {
	if argv[0][0] != 'p' && argv[0][0] != 'r' {
		return notMine
	}
	if len(argv) < 2 {
		return notMine
	}
	c := &lineCtx{r: r, subsys: "trace_kprobe", argv: argv}
	isReturn := argv[0][0] == 'r'
	head, err := grammar.ParseHead(argv[0])
	if err != nil {
		return createResult{err: err}
	}

	maxactive, res, ok := c.maxactive(head, isReturn, grammar.ErrBadMaxactType)
	if !ok {
		return res
	}

	parsed, err := grammar.ParseKprobePlace(argv[1])
	if err != nil {
		return createResult{err: err}
	}
	if parsed.IsUprobe() {
		return notMine
	}
	place, ge := parsed.Site()
	if ge != nil {
		return c.fail(ge)
	}
	entry := false
	if !place.IsAddr {
		// Address probes get neither the entry nor the return flag.
		if place.Return {
			isReturn = true
		}
		// kprobe_on_func_entry; ENOENT (a module not loaded yet) defers
		// the question to registration.
		onEntry := r.model.KprobeOnFuncEntry(place.Symbol, uint64(place.Offset))
		if isReturn && onEntry == syscall.EINVAL && r.dialect.RetprobeEntryFirst {
			return c.failErrno(grammar.ErrBadRetprobe, 1, 0, syscall.EINVAL)
		}
		if res, ok := r.validateSymbol(c, &place); !ok {
			return res
		}
		switch onEntry {
		case 0:
			entry = !isReturn
		case syscall.EINVAL:
			if isReturn {
				return c.failErrno(grammar.ErrBadRetprobe, 1, 0, syscall.EINVAL)
			}
		}
	}

	group, event, ge := head.GroupEvent("kprobes")
	if ge != nil {
		return c.fail(ge)
	}
	letter := byte('p')
	if isReturn {
		letter = 'r'
	}
	if event == "" {
		var name string
		if place.IsAddr {
			name = fmt.Sprintf("%c_0x%016x", letter, place.Addr)
		} else {
			name = fmt.Sprintf("%c_%s_%d", letter, place.Symbol, place.Offset)
		}
		event = grammar.SanitizeEventName(grammar.TruncateName(name), r.dialect.SanitizeStar)
	}

	kind := Kprobe
	if isReturn {
		kind = Kretprobe
	}
	ctx := &fetchargs.Context{
		Model:   r.model,
		Dialect: r.dialect,
		Kind:    fetchargs.KProbe,
		Return:  isReturn && !place.IsAddr,
		Entry:   entry,
	}
	if !place.IsAddr {
		ctx.Func = place.Symbol
	}
	args, res, ok := c.parseArgs(ctx)
	if !ok {
		return res
	}

	p := &Probe{
		Symbol: place.Symbol,
		Module: place.Module,
		Offset: uint64(place.Offset),
		Args:   args,
	}
	return r.registerKprobe(c, &place, kind, group, event, maxactive, p)
}

// parseArgs runs the argument passes of the create functions: the
// whole-line preparation (BTF $arg expansion, the argument count limit,
// %pd/%pD rewriting), then each argument in order.
func (c *lineCtx) parseArgs(ctx *fetchargs.Context) ([]*fetchargs.Arg, createResult, bool) {
	toks, err := fetchargs.PrepareArgs(ctx, c.argv)
	if err != nil {
		return nil, c.argError(ctx, err), false
	}
	args := make([]*fetchargs.Arg, 0, len(toks))
	for i, tok := range toks {
		a, err := fetchargs.Parse(ctx, tok, i, args)
		if err != nil {
			return nil, c.argError(ctx, err), false
		}
		args = append(args, a)
	}
	// The kernel rewrote %pd/%pD arguments in its argv in place: errors
	// from here on (registration, appending) log the rewritten command.
	c.argv = ctx.LoggedArgv(c.argv)
	return args, createResult{}, true
}

// validateSymbol is the kernel's validate_probe_symbol step: a symbol of a
// module that is not loaded is left for later (pending); otherwise it must
// name exactly one kallsyms entry.
func (r *Registry) validateSymbol(c *lineCtx, p *grammar.KprobeSite) (createResult, bool) {
	if p.HasMod && !r.model.ModuleLoaded(p.Module) {
		return createResult{}, true
	}
	switch n := r.model.NumberOfSameSymbols(p.Symbol); {
	case n > 1:
		return c.failErrno(grammar.ErrNonUniqSymbol, 1, 0, r.dialect.NonUniqSymbolErrno), false
	case n == 0:
		return c.failErrno(grammar.ErrBadProbeAddr, 1, 0, r.dialect.UnknownSymbolErrno), false
	}
	return createResult{}, true
}

// registerKprobe is the kernel's register_trace_kprobe plus the error
// mapping of the create function: append to an existing kprobe event of
// the same name, or create the event; then arm the probe.
func (r *Registry) registerKprobe(c *lineCtx, place *grammar.KprobeSite, kind Kind, group, name string, maxactive int, p *Probe) createResult {
	old := r.findEvent(group, name)
	if (old != nil && !old.Kind.isKprobe()) || isStaticEvent(r.dialect.Name, group, name) {
		return c.failErrno(grammar.ErrEventExist, 0, 0, syscall.EEXIST)
	}
	if old != nil {
		if old.Kind.IsReturn() != kind.IsReturn() {
			return c.failErrno(grammar.ErrDiffProbeType, 0, 0, syscall.EEXIST)
		}
		// The kernel compares places by symbol text and offset; every
		// address probe has the symbol "unknown" and offset 0, so two
		// address probes with the same arguments are "the same probe"
		// even at different addresses.
		if res, ok := c.checkAppend(old, p, func(q *Probe) bool {
			return q.Symbol == p.Symbol && q.Offset == p.Offset
		}); !ok {
			return res
		}
	}

	// Arm the probe (__register_trace_kprobe and register_k*probe).
	addr, pending, ge := r.armKprobe(place, kind, p.Args)
	if ge != nil {
		return c.fail(ge)
	}
	p.Pending = pending
	p.Addr = addr
	if kind == Kretprobe {
		p.MaxActive = maxactive
		// register_kretprobe gives a maxactive of 0 or less (a wrapped
		// one, see ParseMaxactive) the default; a probe not registered
		// (pending) reads back what was written, "r-1".
		if maxactive <= 0 && !pending {
			p.MaxActive = DefaultMaxActive(r.model)
		}
	}
	p.Line = kprobeLine(kind, group, name, p)
	r.addProbe(old, group, name, kind, p)
	return createResult{}
}

// checkAppend runs the multi-probe checks: argument count, names and
// types must match the event's (DIFF_ARG_TYPE at the first differing
// argument), and an identical probe must not exist (SAME_PROBE).
func (c *lineCtx) checkAppend(old *Event, p *Probe, samePlace func(*Probe) bool) (createResult, bool) {
	if k := compareArgTypes(p.Args, old.Args); k != 0 {
		return c.failErrno(grammar.ErrDiffArgType, k+1, 0, syscall.EEXIST), false
	}
	for _, q := range old.Probes {
		if !samePlace(q) {
			continue
		}
		same := true
		for i := range q.Args {
			if q.Args[i].Body != p.Args[i].Body {
				same = false
				break
			}
		}
		if same {
			return c.failErrno(grammar.ErrSameProbe, 0, 0, syscall.EEXIST), false
		}
	}
	return createResult{}, true
}

// compareArgTypes is trace_probe_compare_arg_type: 0 when the new probe's
// arguments match the event's, else the 1-based index of the first
// mismatch (one past the shorter list when the counts differ).
func compareArgTypes(a, b []*fetchargs.Arg) int {
	if len(a) < len(b) {
		return len(a) + 1
	}
	if len(a) > len(b) {
		return len(b) + 1
	}
	for i := range a {
		if a[i].Name != b[i].Name || !a[i].SameType(b[i]) {
			return i + 1
		}
	}
	return 0
}

// armKprobe predicts what registering the kprobe does (the kernel model's
// CheckProbeAddress, in the kernel's order) and returns the probed address.
// pending is true when the kernel accepts the probe without arming it: the
// place cannot be resolved (-ENOENT) and the event names no symbol (a raw
// address) or names a module that is not loaded.
func (r *Registry) armKprobe(place *grammar.KprobeSite, kind Kind, args []*fetchargs.Arg) (addr uint64, pending bool, ge *grammar.Error) {
	// ENOENT from registration is accepted, the probe left unarmed, when
	// the event has no symbol or its module is not loaded.
	deferOK := place.IsAddr || (place.HasMod && !r.model.ModuleLoaded(place.Module))
	addr = place.Addr
	if !place.IsAddr {
		a, ok := r.model.LookupName(place.Symbol)
		if !ok {
			// Only a symbol of a module that is not loaded gets here
			// (validateSymbol rejected the others). The @SYM arguments
			// are still resolved before register_kprobe's -ENOENT.
			if errno := resolveArgSymbols(r, args); errno != 0 && errno != syscall.ENOENT {
				return 0, false, regError(errno)
			}
			return 0, true, nil
		}
		addr = a + uint64(place.Offset)
	}
	code, errno := r.model.CheckProbeAddress(addr, kind == Kretprobe)
	// __register_trace_kprobe resolves @SYM arguments after the notrace
	// check and before register_k*probe, so only a notrace refusal beats
	// an argument that does not resolve ("p jiffies @nosuch" is EINVAL,
	// "p do_int3 @nosuch" ENOENT although do_int3 is blacklisted).
	if !(code == grammar.ErrFailRegProbe && errno == syscall.EINVAL && r.model.WithinNotraceFunc(addr)) {
		if aerr := resolveArgSymbols(r, args); aerr != 0 {
			if aerr == syscall.ENOENT && deferOK {
				return place.Addr, true, nil
			}
			return 0, false, regError(aerr)
		}
	}
	switch {
	case errno == syscall.ENOENT && deferOK:
		return place.Addr, true, nil
	case errno != 0:
		return 0, false, &grammar.Error{Code: code, Arg: 1, Off: 0, Errno: errno}
	}
	if site, errno := r.model.ResolveKprobe(addr); errno == 0 {
		addr = site.Addr
	}
	return addr, false, nil
}

// resolveArgSymbols is traceprobe_update_arg over all arguments: the
// errno of the first @SYM[+-OFF] that does not resolve (ENOENT for an
// unknown symbol, EINVAL for a malformed offset), or 0.
func resolveArgSymbols(r *Registry, args []*fetchargs.Arg) syscall.Errno {
	for _, a := range args {
		if err := a.ResolveSymbols(r.model); err != nil {
			var errno syscall.Errno
			if errors.As(err, &errno) {
				return errno
			}
			return syscall.EINVAL
		}
	}
	return 0
}

// regError maps a registration errno to the create functions' log entry at
// argv[1]: EILSEQ is BAD_INSN_BNDRY, ENOENT BAD_PROBE_ADDR, anything else
// FAIL_REG_PROBE.
func regError(errno syscall.Errno) *grammar.Error {
	code := grammar.ErrFailRegProbe
	switch errno {
	case syscall.EILSEQ:
		code = grammar.ErrBadInsnBndry
	case syscall.ENOENT:
		code = grammar.ErrBadProbeAddr
	}
	return &grammar.Error{Code: code, Arg: 1, Off: 0, Errno: errno}
}

// kprobeLine is the kprobe readback line (trace_kprobe_show).
func kprobeLine(kind Kind, group, name string, p *Probe) string {
	b := make([]byte, 0, 64)
	if kind == Kretprobe {
		b = append(b, 'r')
		if p.MaxActive != 0 {
			b = strconv.AppendInt(b, int64(p.MaxActive), 10)
		}
	} else {
		b = append(b, 'p')
	}
	b = append(b, ':')
	b = append(b, group...)
	b = append(b, '/')
	b = append(b, name...)
	b = append(b, ' ')
	b = append(b, placeText(p)...)
	return string(appendArgs(b, p.Args))
}

// placeText is how the kernel prints a kprobe's place, in the readback and
// when matching a removal command: "0x%p" for addresses (16 hex digits with
// no_hash_pointers), "SYM+OFF" with a decimal offset, or "SYM".
func placeText(p *Probe) string {
	switch {
	case p.Symbol == "":
		return fmt.Sprintf("0x%016x", p.Addr)
	case p.Offset != 0:
		return p.Symbol + "+" + strconv.FormatUint(p.Offset, 10)
	}
	return p.Symbol
}

// appendArgs appends " name=body" for every argument.
func appendArgs(b []byte, args []*fetchargs.Arg) []byte {
	for _, a := range args {
		b = append(b, ' ')
		b = append(b, a.Name...)
		b = append(b, '=')
		b = append(b, a.Body...)
	}
	return b
}

// DefaultMaxActive is the number of kretprobe instances register_kretprobe
// gives a return probe registered without MAXACTIVE, the value its
// readback then shows: max(10, 2 * possible CPUs).
func DefaultMaxActive(m *kernel.Model) int { return max(10, 2*m.CPUs()) }
