package events

import (
	"strings"
	"syscall"

	"github.com/ktrace-dev/ktrace/fetchargs"
	"github.com/ktrace-dev/ktrace/filter"
	"github.com/ktrace-dev/ktrace/grammar"
	"github.com/ktrace-dev/ktrace/kernel"
)

// createEprobe is the kernel's event probe create function (trace_eprobe)
// for one e line, check for check in the kernel's order:
//
//	e[:[GRP/][EVENT]] SYSTEM.EVENT|SYSTEM/EVENT [FETCHARGS] [if FILTER]
func (r *Registry) createEprobe(argv []string) createResult {
	if len(argv) < 2 || argv[0][0] != 'e' {
		return notMine
	}
	c := &lineCtx{r: r, subsys: "event_probe", argv: argv}
	group, event := "eprobes", ""
	// The event spec is whatever follows the first ':' of argv[0].
	if i := strings.IndexByte(argv[0], ':'); i >= 0 {
		head, err := grammar.ParseHead(argv[0])
		if err != nil {
			return createResult{err: err}
		}
		g, e, ge := grammar.CheckEventName(head.Event, i+1)
		if ge != nil {
			return c.fail(ge)
		}
		if g != "" {
			group = g
		}
		event = e
	}

	// SYSTEM.EVENT is checked like an event spec; any problem also logs
	// NO_EVENT_INFO.
	place, err := grammar.ParseEprobePlace(argv[1])
	if err != nil {
		return createResult{err: err}
	}
	sys, name, ge := grammar.CheckEventName(place.Event, 0)
	if ge != nil || sys == "" || name == "" {
		we := &WriteError{Errno: syscall.EINVAL}
		if ge != nil {
			ge.Arg = 1
			we.Logs = append(we.Logs, *c.entry(ge))
		}
		we.Logs = append(we.Logs, *c.entry(&grammar.Error{Code: grammar.ErrNoEventInfo, Arg: 1}))
		return createResult{err: we}
	}
	if event == "" {
		event = name
	}

	// The first "if" ends the arguments; the rest is the filter.
	nargs, filterIdx := len(argv), 0
	for i := 2; i < len(argv); i++ {
		if argv[i] == "if" {
			nargs, filterIdx = i, i+1
			break
		}
	}
	if nargs-2 > grammar.MaxTraceArgs && r.dialect.TooManyArgs == grammar.ArgsE2BIG {
		return createResult{err: &WriteError{Errno: syscall.E2BIG}}
	}

	att, format, ok := r.findEprobeTarget(sys, name)
	if !ok {
		return c.failErrno(grammar.ErrBadAttachEvent, 1, 0, syscall.ENODEV)
	}
	if filterIdx != 0 {
		if filterIdx == len(argv) {
			return c.failErrno(grammar.ErrNoEPFilter, filterIdx, 0, syscall.EINVAL)
		}
		att.Filter = strings.Join(argv[filterIdx:], " ")
		f, fe := r.checkEprobeFilter(att.Filter, format)
		if fe != nil {
			return createResult{err: &WriteError{Errno: syscall.EINVAL, Logs: []LogEntry{{
				Subsys: grammar.FilterSubsys, Msg: fe.Message(), Cmd: att.Filter, Pos: fe.LogPos(),
			}}}}
		}
		att.FilterProg = f
	}
	att.ID = (&kernel.Tracepoint{Format: format}).ID()

	att.Fields = eventFields(format)
	ctx := &fetchargs.Context{
		Model:   r.model,
		Dialect: r.dialect,
		Kind:    fetchargs.EProbe,
		Fields:  att.Fields,
	}
	argc := nargs
	if argc-2 > grammar.MaxTraceArgs {
		argc = 2 + grammar.MaxTraceArgs
	}
	args := make([]*fetchargs.Arg, 0, argc-2)
	for i := 2; i < argc; i++ {
		a, err := fetchargs.Parse(ctx, fetchargs.Token{Text: argv[i], LogIndex: i}, i-2, args)
		if err != nil {
			return c.argError(ctx, err)
		}
		if !fetchargs.ResolveEventField(ctx, a) {
			return c.failErrno(grammar.ErrBadAttachArg, i, 0, syscall.ENOENT)
		}
		// @SYM[+|-OFFS] is resolved right away; a failure is not
		// logged (traceprobe_update_arg).
		if errno := resolveArgSymbols(r, []*fetchargs.Arg{a}); errno != 0 {
			return createResult{err: &WriteError{Errno: errno}}
		}
		args = append(args, a)
	}

	if r.findEvent(group, event) != nil || isStaticEvent(r.dialect.Name, group, event) {
		return c.failErrno(grammar.ErrEventExist, 0, 0, syscall.EEXIST)
	}
	p := &Probe{Args: args}
	line := "e:" + group + "/" + event + " " + att.System + "." + att.Name
	p.Line = string(appendArgs([]byte(line), args))
	r.addEvent(&Event{Group: group, Name: event, Kind: Eprobe, Args: args, Attached: att}, p)
	return createResult{}
}

// findEprobeTarget is find_and_get_event: the event system/name an event
// probe may attach to, and its format. Kprobe, uprobe and event probe
// events are skipped, and so are the ftrace-internal events.
func (r *Registry) findEprobeTarget(system, name string) (*Attached, string, bool) {
	for _, e := range r.events {
		if e.Group != system || e.Name != name {
			continue
		}
		if e.Kind.isKprobe() || e.Kind.IsUprobe() || e.Kind == Eprobe {
			continue
		}
		return &Attached{System: system, Name: name, Event: e}, e.Format(), true
	}
	if system == "ftrace" || r.model == nil {
		return nil, "", false
	}
	tps, _, err := r.model.Tracepoints()
	if err != nil {
		return nil, "", false
	}
	for i := range tps {
		if tps[i].System == system && tps[i].Name == name {
			return &Attached{System: system, Name: name}, tps[i].Format, true
		}
	}
	return nil, "", false
}

// eventFields are the fields of a format file after the common ones.
func eventFields(format string) []fetchargs.EventField {
	tp := kernel.Tracepoint{Format: format}
	var out []fetchargs.EventField
	for _, f := range tp.Fields() {
		if f.Common {
			continue
		}
		out = append(out, fetchargs.EventField{Name: f.Name, Type: f.Type, Offset: f.Offset, Size: f.Size, Signed: f.Signed})
	}
	return out
}

// checkEprobeFilter compiles an event probe's filter against the attached
// event's format, as the kernel does once when the probe is created.
func (r *Registry) checkEprobeFilter(expr, format string) (*filter.Filter, *filter.Error) {
	ev, err := filter.FieldsFromFormat(format, r.dialect.FilterCPUs)
	if err != nil {
		return nil, &filter.Error{Errno: syscall.EINVAL}
	}
	return filter.Parse(expr, ev, r.filterEnv())
}

// referenced reports whether an event probe is attached to ev.
func (r *Registry) referenced(ev *Event) bool {
	for _, e := range r.events {
		if e.Kind == Eprobe && e.Attached.Event == ev {
			return true
		}
	}
	return false
}

// matchEprobe is the event probe part of a removal's match: the first
// token is SYS.EVENT or SYS/EVENT, SYS the attached system (on kernels
// that compare only as many bytes as the token has, a prefix of it), then
// a prefix of the arguments.
func matchEprobe(p *Probe, argv []string, d *grammar.Dialect) bool {
	maxArgStr := d.MaxArgStrLen
	if len(argv) == 0 {
		return true
	}
	att := p.Event.Attached
	tok := argv[0]
	sep := strings.IndexByte(tok, '/')
	if sep < 0 {
		sep = strings.IndexByte(tok, '.')
	}
	if sep < 0 || att.Name != tok[sep+1:] {
		return false
	}
	if sys := tok[:sep]; sys != att.System && !(d.EprobeSystemPrefix && strings.HasPrefix(att.System, sys)) {
		return false
	}
	return matchArgs(p, argv[1:], maxArgStr)
}
