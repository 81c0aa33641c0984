package trigger

import (
	"strings"
	"syscall"

	"github.com/ktrace-dev/ktrace/synth"
)

// Hist trigger handlers and their actions: onmatch(SYSTEM.EVENT),
// onmax($var) and onchange($var) with trace(SYNTH,...) (or the legacy
// SYNTH(...)), save(...) and snapshot(), checked the way Linux's
// parse_actions and create_actions do. ktrace only parses them: nothing
// runs them.

// maxActions is HIST_ACTIONS_MAX.
const maxActions = 8

// maxParams is SYNTH_FIELDS_MAX: parameters of one action.
const maxParams = 64

// Handlers.
const (
	handlerOnMatch = iota + 1
	handlerOnMax
	handlerOnChange
)

// Action kinds.
const (
	actionSave = iota + 1
	actionTrace
	actionSnapshot
)

// Hist error messages of handlers and actions (hist_err_text).
const (
	histErrSynthEventNotFound = "Couldn't find synthetic event"
	histErrSynthTypeMismatch  = "Param type doesn't match synthetic event field type"
	histErrSynthCountMismatch = "Param count doesn't match synthetic event field count"
	histErrFieldVarParseFail  = "Couldn't parse field variable"
	histErrVarCreateFindFail  = "Couldn't create or find variable"
	histErrOnxNotVar          = "For onmax(x) or onchange(x), x must be a variable"
	histErrOnxVarNotFound     = "Couldn't find onmax or onchange variable"
	histErrOnxVarCreateFail   = "Couldn't create onmax or onchange variable"
	histErrFieldVarCreateFail = "Couldn't create field variable"
	histErrTooManyParams      = "Too many action params"
	histErrParamNotFound      = "Couldn't find param"
	histErrInvalidParam       = "Invalid action param"
	histErrActionNotFound     = "No action found"
	histErrTooManySaveActions = "Can't have more than one save() action per hist"
	histErrActionMismatch     = "Handler doesn't support action"
	histErrNoClosingParen     = "No closing paren found"
	histErrSubsysNotFound     = "Missing subsystem"
	histErrInvalidSubsysEvent = "Invalid subsystem or event name"
	histErrEventFileNotFound  = "Event file not found"
	histErrHistNotFound       = "Matching event histogram not found"
	histErrHistCreateFail     = "Couldn't create histogram for field"
	histErrSynthVarNotFound   = "Couldn't find synthetic variable"
)

// Action is one handler of a hist trigger with its action.
type Action struct {
	Handler int // handlerOnMatch, handlerOnMax, handlerOnChange
	Kind    int // actionSave, actionTrace, actionSnapshot
	// Name is the action's name as written ("trace", "save", or the
	// synthetic event of the legacy form); the kernel matches it by
	// prefix, and prints it back as written.
	Name string
	// UseTrace is the trace(SYNTH,...) form; Synth is its first
	// parameter.
	UseTrace bool
	Synth    string
	Params   []string
	// MatchSystem and MatchEvent are onmatch()'s event; VarStr is
	// onmax()'s or onchange()'s text ("$v").
	MatchSystem, MatchEvent string
	VarStr                  string
	// synth is the synthetic event a trace action generates, once
	// checked.
	synth string
	// saveNames are the variables save() made, as the trigger file
	// shows them.
	saveNames []string
	// params are a trace action's parameters as checked (ParamFields).
	params []*HistField
	// saves are the field variables save() made (SaveFields); track is
	// the variable onmax() or onchange() follows (Tracked).
	saves []*HistField
	track *HistField
}

// print is print_onmatch_spec and print_track_data_spec.
func (a *Action) print(b *strings.Builder) {
	switch a.Handler {
	case handlerOnMatch:
		b.WriteString(":onmatch(" + a.MatchSystem + "." + a.MatchEvent + ").")
	case handlerOnMax:
		b.WriteString(":onmax(" + a.VarStr + ").")
	default:
		b.WriteString(":onchange(" + a.VarStr + ").")
	}
	b.WriteString(a.Name + "(")
	switch a.Kind {
	case actionSave:
		b.WriteString(strings.Join(a.saveNames, ","))
	case actionTrace:
		if a.UseTrace {
			b.WriteString(a.Synth)
		}
		for i, s := range a.Params {
			if i > 0 || a.UseTrace {
				b.WriteByte(',')
			}
			b.WriteString(s)
		}
	}
	b.WriteByte(')')
}

// same is actions_match for one action.
func (a *Action) same(o *Action) bool {
	if a.Handler != o.Handler || a.Kind != o.Kind || len(a.Params) != len(o.Params) {
		return false
	}
	for i := range a.Params {
		if a.Params[i] != o.Params[i] {
			return false
		}
	}
	if a.target() != o.target() {
		return false
	}
	if a.Handler == handlerOnMatch {
		return a.MatchSystem == o.MatchSystem && a.MatchEvent == o.MatchEvent
	}
	return a.VarStr == o.VarStr
}

// target is the synthetic event name a trace action names (the action
// name for the legacy form).
func (a *Action) target() string {
	if a.UseTrace {
		return a.Synth
	}
	return a.Name
}

// parseActions is parse_actions: each handler's syntax.
func (p *histParser) parseActions(h *Hist) Result {
	for _, str := range h.actionStrs {
		a := &Action{}
		var r Result
		switch {
		case strings.HasPrefix(str, "onmatch("):
			r = p.onmatch(a, str[len("onmatch("):])
		case strings.HasPrefix(str, "onmax("):
			a.Handler = handlerOnMax
			r = p.trackData(a, str[len("onmax("):])
		default:
			a.Handler = handlerOnChange
			r = p.trackData(a, str[len("onchange("):])
		}
		if r.Errno != 0 {
			return r
		}
		h.Actions = append(h.Actions, a)
	}
	return Result{}
}

// onmatch is onmatch_parse: "SYSTEM.EVENT).ACTION(...)".
func (p *histParser) onmatch(a *Action, str string) Result {
	a.Handler = handlerOnMatch
	match, rest, ok := strings.Cut(str, ")")
	if !ok {
		return p.fail(syscall.EINVAL, histErrNoClosingParen, p.errpos(match))
	}
	system, event, ok := strings.Cut(match, ".")
	if !ok {
		return p.fail(syscall.EINVAL, histErrSubsysNotFound, p.errpos(system))
	}
	if p.ev.Exists == nil || !p.ev.Exists(system, event) {
		return p.fail(syscall.EINVAL, histErrInvalidSubsysEvent, p.errpos(event))
	}
	a.MatchSystem, a.MatchEvent = system, event
	return p.action(a, rest)
}

// trackData is track_data_parse: "$VAR).ACTION(...)".
func (p *histParser) trackData(a *Action, str string) Result {
	v, rest, ok := strings.Cut(str, ")")
	if !ok {
		return p.errno(syscall.EINVAL)
	}
	a.VarStr = v
	return p.action(a, rest)
}

// action is action_parse: the text after the handler's ')' up to a '.'
// is ignored, then NAME(PARAMS).
func (p *histParser) action(a *Action, str string) Result {
	_, str, ok := strings.Cut(str, ".")
	if !ok {
		return p.fail(syscall.EINVAL, histErrActionNotFound, 0)
	}
	name, str, ok := strings.Cut(str, "(")
	if !ok {
		return p.fail(syscall.EINVAL, histErrActionNotFound, 0)
	}
	a.Name = name
	switch {
	case strings.HasPrefix(name, "save"):
		params, _, _ := strings.Cut(str, ")")
		if r := p.actionParams(a, params); r.Errno != 0 {
			return r
		}
		if a.Handler == handlerOnMatch {
			return p.fail(syscall.EINVAL, histErrActionMismatch, p.errpos(name))
		}
		a.Kind = actionSave
	case strings.HasPrefix(name, "snapshot"):
		params, _, ok := strings.Cut(str, ")")
		if !ok {
			return p.fail(syscall.EINVAL, histErrNoClosingParen, p.errpos(params))
		}
		if a.Handler == handlerOnMatch {
			return p.fail(syscall.EINVAL, histErrActionMismatch, p.errpos(name))
		}
		a.Kind = actionSnapshot
	default:
		params, _, _ := strings.Cut(str, ")")
		a.UseTrace = strings.HasPrefix(name, "trace")
		if r := p.actionParams(a, params); r.Errno != 0 {
			return r
		}
		a.Kind = actionTrace
	}
	return Result{}
}

// actionParams is parse_action_params: PARAM[,PARAM...], blanks around
// each stripped, each at least two characters; trace()'s first one is
// the synthetic event.
func (p *histParser) actionParams(a *Action, params string) Result {
	first := true
	for _, param := range strings.Split(params, ",") {
		if len(a.Params) >= maxParams {
			return p.fail(syscall.EINVAL, histErrTooManyParams, 0)
		}
		param = strings.TrimFunc(param, isSpaceRune)
		if len(param) < 2 {
			return p.fail(syscall.EINVAL, histErrInvalidParam, p.errpos(param))
		}
		if first && a.UseTrace {
			a.Synth = param
			first = false
			continue
		}
		first = false
		a.Params = append(a.Params, param)
	}
	return Result{}
}

// createActions is create_actions: what each action names must exist
// and fit.
func (p *histParser) createActions(h *Hist) Result {
	saved := false
	// The trigger's map holds at most maxVars variables: its own, then
	// those the actions make (tracking values, field variables).
	p.mapVars = len(h.Vars)
	for _, a := range h.Actions {
		if a.Handler != handlerOnMatch {
			if !strings.HasPrefix(a.VarStr, "$") {
				return p.fail(syscall.EINVAL, histErrOnxNotVar, p.errpos(a.VarStr))
			}
			name := a.VarStr[1:]
			v := findVarIn(h, name)
			if v == nil {
				return p.fail(syscall.EINVAL, histErrOnxVarNotFound, p.errpos(name))
			}
			a.track = v
			if p.newRef(v, "", "", false) == nil {
				return p.errno(syscall.ENOMEM)
			}
			track := "__max"
			if a.Handler == handlerOnChange {
				track = "__change"
			}
			if p.ownVar(track) || p.mapVars >= maxVars {
				return p.fail(syscall.EINVAL, histErrOnxVarCreateFail, 0)
			}
			p.mapVars++
		}
		switch a.Kind {
		case actionTrace:
			if r := p.traceAction(a); r.Errno != 0 {
				return r
			}
		case actionSnapshot:
			if p.ev.SnapshotTaken != nil && p.ev.SnapshotTaken() {
				return p.errno(syscall.EBUSY)
			}
		case actionSave:
			if saved {
				return p.fail(syscall.EEXIST, histErrTooManySaveActions, 0)
			}
			for _, param := range a.Params {
				v, r := p.fieldVarOf(param)
				if r.Errno != 0 {
					p.log(histErrFieldVarCreateFail, p.errpos(param))
					return p.errno(r.Errno)
				}
				a.saveNames = append(a.saveNames, v.Var)
				a.saves = append(a.saves, v)
			}
			saved = len(a.Params) > 0
		}
	}
	return Result{}
}

// fieldVarOf is create_field_var: a variable of this event's field str,
// for an action (str must parse as a variable's field and name no
// variable of the event).
func (p *histParser) fieldVarOf(str string) (*HistField, Result) {
	f, trunc, r := p.atom(str, flVar, "")
	if r.Errno != 0 {
		p.log(histErrFieldVarParseFail, p.errpos(str))
		return nil, p.errno(r.Errno)
	}
	// The kernel names the variable by the text its parsing left
	// ("sched" for "sched.sched_switch.prev_pid").
	name := str[:trunc]
	if p.ownVar(name) || p.mapVars >= maxVars {
		p.log(histErrVarCreateFindFail, p.errpos(name))
		return nil, p.errno(syscall.EINVAL)
	}
	p.mapVars++
	v := *f
	v.Flags |= flVar
	v.Var = name
	// create_var gives the variable the field's type and size but not
	// its signedness: a synthetic field of another type name must then
	// be unsigned to take it (check_synth_field).
	v.Signed = false
	return &v, Result{}
}

// traceAction is trace_action_create: the synthetic event must exist,
// and each parameter (a variable "$v", or a field made a variable) must
// fit its field.
func (p *histParser) traceAction(a *Action) Result {
	name := a.target()
	var se *synth.Event
	if p.ev.Synthetic != nil {
		se = p.ev.Synthetic(name)
	}
	if se == nil {
		return p.fail(syscall.EINVAL, histErrSynthEventNotFound, p.errpos(name))
	}
	pos := 0
	a.params = nil
	for _, param := range a.Params {
		var system, event string
		qualified := false
		if s, rest, ok := strings.Cut(param, "."); ok {
			e, rest2, ok := strings.Cut(rest, ".")
			if !ok {
				return p.errno(syscall.EINVAL)
			}
			system, event, param, qualified = s, e, rest2, true
		}
		var v *HistField
		if strings.HasPrefix(param, "$") {
			v = p.actionVar(a, system, event, qualified, param[1:])
			if v == nil {
				return p.fail(syscall.EINVAL, histErrParamNotFound, p.errpos(param[1:]))
			}
		} else {
			var r Result
			v, r = p.actionFieldVar(a, system, event, qualified, param)
			if r.Errno != 0 {
				return r
			}
			if v == nil {
				return p.errno(syscall.EINVAL)
			}
		}
		if pos >= len(se.Fields) || !synthFits(&se.Fields[pos], v) {
			return p.fail(syscall.EINVAL, histErrSynthTypeMismatch, p.errpos(param))
		}
		if v.owner != nil && p.newRef(v, system, event, qualified) == nil {
			return p.errno(syscall.ENOMEM)
		}
		a.params = append(a.params, v)
		pos++
	}
	if pos != len(se.Fields) {
		return p.fail(syscall.EINVAL, histErrSynthCountMismatch, p.errpos(se.Name))
	}
	a.synth = se.Name
	return Result{}
}

// synthFits is check_synth_field.
func synthFits(sf *synth.Field, v *HistField) bool {
	if strings.Contains(v.Type, "char[") && sf.String && sf.Dynamic {
		return true
	}
	if strings.Contains(v.Type, "long[") && sf.Stack {
		return true
	}
	if sf.Type == v.Type {
		return true
	}
	return sf.Size == v.Size && (sf.String || sf.Signed == v.Signed)
}

// actionVar is trace_action_find_var: "$v" of this trigger, else of
// onmatch()'s event or any event.
func (p *histParser) actionVar(a *Action, system, event string, qualified bool, name string) *HistField {
	if !qualified || (system == p.ev.System && event == p.ev.Name) {
		if v := findVarIn(p.h, name); v != nil {
			return v
		}
	}
	if !qualified && a.Handler == handlerOnMatch {
		system, event, qualified = a.MatchSystem, a.MatchEvent, true
	}
	return p.findEventVar(system, event, qualified, name)
}

// actionFieldVar is trace_action_create_field_var: a field of this
// event, else of onmatch()'s event (through a histogram the kernel makes
// there).
func (p *histParser) actionFieldVar(a *Action, system, event string, qualified bool, field string) (*HistField, Result) {
	if !qualified || (system == p.ev.System && event == p.ev.Name) {
		v, r := p.fieldVarOf(field)
		if r.Errno == 0 {
			return v, r
		}
	}
	if !qualified && a.Handler == handlerOnMatch {
		system, event, qualified = a.MatchSystem, a.MatchEvent, true
	}
	if !qualified {
		return nil, Result{}
	}
	return p.fieldVarHist(system, event, field)
}

// fieldVarHist is create_field_var_hist: a variable for field of
// SYSTEM:EVENT, defined by a hist trigger the kernel adds to that event
// with the keys of one of its hist triggers whose keys match this one's.
func (p *histParser) fieldVarHist(system, event, field string) (*HistField, Result) {
	var ol *List
	var oev *Event
	if p.ev.ListOf != nil {
		ol, oev = p.ev.ListOf(system, event)
	}
	if ol == nil {
		return nil, p.fail(syscall.EINVAL, histErrEventFileNotFound, p.errpos(field))
	}
	var compat *Trigger
	for _, t := range ol.Triggers {
		if t.Hist != nil && keysCompatible(p.h, t.Hist) {
			compat = t
			break
		}
	}
	if compat == nil {
		return nil, p.fail(syscall.EINVAL, histErrHistNotFound, p.errpos(field))
	}
	varName := "synthetic_" + field
	if v := p.findEventVar(system, event, true, varName); v != nil {
		return v, Result{}
	}
	var b strings.Builder
	b.WriteString("keys=")
	for i, k := range compat.Hist.Keys {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(k.Name)
	}
	b.WriteString(":" + varName + "=" + field)
	if compat.Filter != nil || compat.FilterText != "" {
		b.WriteString(" if " + compat.FilterText)
	}
	cmd := b.String()
	q := &histParser{cmd: p.cmd, loc: p.loc, ev: oev, d: p.d, list: ol}
	r := q.parse(cmd, false)
	p.logs = append(p.logs, q.logs...)
	if r.Errno != 0 {
		return nil, p.fail(r.Errno, histErrHistCreateFail, p.errpos(field))
	}
	v := p.findEventVar(system, event, true, varName)
	if v == nil {
		return nil, p.fail(syscall.EINVAL, histErrSynthVarNotFound, p.errpos(field))
	}
	p.h.hidden = append(p.h.hidden, hiddenHist{system, event, cmd})
	return v, Result{}
}

// keysCompatible is compatible_keys: o's keys have h's types and sizes.
func keysCompatible(h, o *Hist) bool {
	if len(h.Keys) != len(o.Keys) {
		return false
	}
	for i, k := range h.Keys {
		ok := o.Keys[i]
		if k.Type != ok.Type || (k.Size+7)&^7 != (ok.Size+7)&^7 || k.Signed != ok.Signed {
			return false
		}
	}
	return true
}
