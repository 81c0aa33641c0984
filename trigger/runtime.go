package trigger

// What a backend needs to run a hist trigger's variables, expressions and
// actions where the event happens, as the kernel's event_hist_trigger
// does.

// IsVar, IsVarRef, IsAlias, IsConst, IsExpr and IsString tell the kinds
// of field: a variable's definition, a reference "$v", a variable defined
// as a reference ("v=$w"), a numeric constant, an expression (Op on
// Operands), a string.
func (f *HistField) IsVar() bool    { return f.Flags&flVar != 0 }
func (f *HistField) IsVarRef() bool { return f.Flags&flVarRef != 0 }
func (f *HistField) IsAlias() bool  { return f.Flags&flAlias != 0 }
func (f *HistField) IsConst() bool  { return f.Flags&flConst != 0 }
func (f *HistField) IsExpr() bool   { return f.Flags&flExpr != 0 }
func (f *HistField) IsString() bool { return f.Flags&flString != 0 }

// Owner is the trigger a variable belongs to (nil for a field variable an
// action made, which reads the event's field).
func (f *HistField) Owner() *Hist { return f.owner }

// Refs are h's variable references, in the order the kernel numbers them
// (hist_data->var_refs).
func (h *Hist) Refs() []*HistField { return h.refs }

// ReadOnce reports whether reference r is read once: parse_expr marks
// each operand of a binary expression so, and a variable read through
// such a reference is unset after the read.
func (h *Hist) ReadOnce(r *HistField) bool {
	var walk func(f *HistField) bool
	walk = func(f *HistField) bool {
		if f == nil {
			return false
		}
		for _, o := range f.Operands {
			if f.Op != opNone && f.Op != opUnary && o == r {
				return true
			}
			if walk(o) {
				return true
			}
		}
		return false
	}
	for _, list := range [][]*HistField{h.Keys, h.Vals, h.Vars} {
		for _, f := range list {
			if walk(f) {
				return true
			}
		}
	}
	return false
}

// IsOnMatch, IsTrace: an onmatch() handler; a trace() action (or the
// legacy SYNTH() form).
func (a *Action) IsOnMatch() bool { return a.Handler == handlerOnMatch }
func (a *Action) IsTrace() bool   { return a.Kind == actionTrace }

// Synthetic is the synthetic event a trace action generates.
func (a *Action) Synthetic() string { return a.synth }

// ParamFields are a trace action's parameters as checked: each a variable
// (of this trigger or another, read through a reference of this trigger)
// or a field variable of this event.
func (a *Action) ParamFields() []*HistField { return a.params }

// IsOnMax, IsOnChange: the onmax() and onchange() handlers; IsSave,
// IsSnapshot: the save() and snapshot() actions.
func (a *Action) IsOnMax() bool    { return a.Handler == handlerOnMax }
func (a *Action) IsOnChange() bool { return a.Handler == handlerOnChange }
func (a *Action) IsSave() bool     { return a.Kind == actionSave }
func (a *Action) IsSnapshot() bool { return a.Kind == actionSnapshot }

// Tracked is the variable onmax() or onchange() follows (nil for
// onmatch()).
func (a *Action) Tracked() *HistField { return a.track }

// SaveFields are the event fields save() keeps, as variables of the
// trigger (the hist file names them so).
func (a *Action) SaveFields() []*HistField { return a.saves }

// Tracks lists the trigger's onmax() and onchange() handlers other than
// snapshot(), whose entries show a tracked value (Entry.Track, in this
// order), and saves is whether one of them saves fields (Entry.Saved).
func (h *Hist) Tracks() (tracks []*Action, saves []*HistField) {
	for _, a := range h.Actions {
		if (a.Handler == handlerOnMax || a.Handler == handlerOnChange) && a.Kind != actionSnapshot {
			tracks = append(tracks, a)
		}
		if a.Kind == actionSave {
			saves = a.saves
		}
	}
	return tracks, saves
}
