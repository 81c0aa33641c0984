package grammar

import (
	"errors"
	"strings"
	"syscall"
)

// The kernel's checks of the parsed constructs, in the kernel's order.
// Errors are attributed to the argv entry the construct came from (Arg)
// with the byte offset of the offending part inside it (Off).

// KretprobeMaxactiveMax is KRETPROBE_MAXACTIVE_MAX (and the fprobe rethook
// limit): the largest accepted maxactive.
const KretprobeMaxactiveMax = 4096

// HasMaxactive reports whether the prefix starts with a digit, which is
// what makes the kernel parse it as a maxactive number.
func (h *Head) HasMaxactive() bool {
	return len(h.Prefix.Value) > 0 && isDigit(h.Prefix.Value[0])
}

// ParseMaxactive parses the maxactive prefix like the kprobe and fprobe
// front ends do: at most 63 characters, kstrtouint base 0, not zero, at most
// KretprobeMaxactiveMax. Errors point at argv[0] offset 1.
//
// The kernel parses into an int: a value of 2^31 or more wraps to a
// negative number, which passes the signed "too big" test. The result
// keeps that wrap ("r4294967295 vfs_read" is maxactive -1, which
// register_kretprobe turns into the default; checked on 6.1 and 6.12).
func (h *Head) ParseMaxactive() (int, *Error) {
	p := h.Prefix.Value
	if len(p) > MaxEventNameLen-1 {
		return 0, &Error{Code: ErrBadMaxact, Arg: 0, Off: 1, Errno: syscall.EINVAL}
	}
	v, err := ParseUint32(p, 0)
	if err != nil || v == 0 {
		return 0, &Error{Code: ErrBadMaxact, Arg: 0, Off: 1, Errno: syscall.EINVAL}
	}
	n := int(int32(v))
	if n > KretprobeMaxactiveMax {
		return 0, &Error{Code: ErrMaxactTooBig, Arg: 0, Off: 1, Errno: syscall.EINVAL}
	}
	return n, nil
}

// HasEvent reports whether argv[0] has an event spec (a ':' after the
// letter), maybe empty.
func (h *Head) HasEvent() bool { return h.Colon.Value != "" }

// EventName checks the event spec as traceprobe_parse_event_name does. It
// returns the group ("" when the spec names none, so the caller's default
// applies) and the event ("" when a group was given with an empty event:
// an automatic name follows). Call it only when HasEvent.
func (h *Head) EventName() (group, event string, err *Error) {
	return CheckEventName(h.Event, h.Colon.Pos.Offset+1)
}

// GroupEvent is EventName with the front end's default group filled in:
// defGroup and no event ("" asks for an automatic name) when the head has
// no event spec or the spec names no group.
func (h *Head) GroupEvent(defGroup string) (group, event string, err *Error) {
	if !h.HasEvent() {
		return defGroup, "", nil
	}
	group, event, err = h.EventName()
	if group == "" {
		group = defGroup
	}
	return group, event, err
}

// CheckEventName checks a [GRP/][EVENT] spec that starts at byte spec of
// its argv entry (nil: an empty spec) like traceprobe_parse_event_name.
// Errors are attributed to argv[0]; an event probe's SYSTEM.EVENT is
// checked the same way and re-attributed by its caller.
func CheckEventName(e *EventName, spec int) (group, event string, err *Error) {
	if e == nil {
		return "", "", &Error{Code: ErrNoEventName, Arg: 0, Off: spec}
	}
	off := spec
	if e.Sep.Value != "" {
		g := e.Group.Value
		switch {
		case g == "":
			return "", "", &Error{Code: ErrNoGroupName, Arg: 0, Off: spec}
		case len(g)+1 > MaxEventNameLen:
			return "", "", &Error{Code: ErrGroupTooLong, Arg: 0, Off: spec}
		case !IsGoodSystemName(g):
			return "", "", &Error{Code: ErrBadGroupName, Arg: 0, Off: spec}
		}
		group = g
		off = e.Sep.Pos.Offset + 1
	}
	event = e.Event.Value
	switch {
	case event == "":
		if e.Sep.Value != "" {
			return group, "", nil
		}
		return "", "", &Error{Code: ErrNoEventName, Arg: 0, Off: off}
	case len(event) >= MaxEventNameLen:
		return "", "", &Error{Code: ErrEventTooLong, Arg: 0, Off: off}
	case !IsGoodName(event):
		return "", "", &Error{Code: ErrBadEventName, Arg: 0, Off: off}
	}
	return group, event, nil
}

// KprobeSite is what a checked kprobe place names: an address, or a
// symbol with an offset.
type KprobeSite struct {
	IsAddr bool
	Addr   uint64 // address probes
	Symbol string // the symbol text as the kernel keeps it: "MOD:SYM" or "SYM", no offset, no suffix
	Module string // text before the first ':' of Symbol, if any
	Func   string // Symbol after the first ':'
	HasMod bool   // Symbol contains ':'
	Offset int64  // 0..UINT_MAX
	Return bool   // "%return" suffix
}

// IsUprobe reports a place that is a uprobe's (a '/' and a ':'), which
// the kprobe front end leaves to the next one.
func (p *KprobePlace) IsUprobe() bool { return p.Uprobe != nil }

// Site checks the place in the order of trace_kprobe's create function:
// an address if kstrtoul accepted the whole place; otherwise a '%' must
// start exactly "%return" (BAD_ADDR_SUFFIX at the '%'), and the offset must
// be a kstrtol number within 0..UINT_MAX (BAD_PROBE_ADDR at offset 0).
// Errors are attributed to argv[1]. Call it only when !IsUprobe.
func (p *KprobePlace) Site() (KprobeSite, *Error) {
	if p.Addr != nil {
		v, _ := ParseUint64(p.Addr.Value.Value, 0) // the lexer checked it
		return KprobeSite{IsAddr: true, Addr: v}, nil
	}
	s := KprobeSite{}
	if p.Suffix != nil {
		if p.Suffix.Text != "return" {
			return s, &Error{Code: ErrBadAddrSuffix, Arg: 1, Off: p.Suffix.Pos.Offset, Errno: syscall.EINVAL}
		}
		s.Return = true
	}
	if o := p.Offset.Value; o != "" {
		off, e := ParseInt64(o, 0)
		if e != nil || off < 0 || off > 0xffffffff {
			return s, &Error{Code: ErrBadProbeAddr, Arg: 1, Off: 0, Errno: syscall.EINVAL}
		}
		s.Offset = off
	}
	s.Func = p.Symbol.Value
	s.Symbol = s.Func
	if p.Module != nil {
		s.HasMod = true
		s.Module = p.Module.Name.Value
		s.Symbol = s.Module + ":" + s.Func
	}
	return s, nil
}

// FprobeSite is what a checked fprobe or tracepoint place names.
type FprobeSite struct {
	Symbol string
	Return bool
}

// Site checks an f/t place like the fprobe front end: a '%' must start
// exactly "%return", and never on a tracepoint (BAD_ADDR_SUFFIX at the
// '%'). For tracepoints, when the dialect checks tracepoint names, the
// first byte outside [A-Za-z0-9_] is BAD_TP_NAME.
func (p *FprobePlace) Site(tracepoint bool, d *Dialect) (FprobeSite, *Error) {
	s := FprobeSite{Symbol: p.Symbol.Value}
	if p.Suffix != nil {
		if tracepoint || p.Suffix.Text != "return" {
			return s, &Error{Code: ErrBadAddrSuffix, Arg: 1, Off: p.Suffix.Pos.Offset, Errno: syscall.EINVAL}
		}
		s.Return = true
	}
	if tracepoint && d != nil && d.TPNameCheck {
		for i := 0; i < len(s.Symbol); i++ {
			c := s.Symbol[i]
			if !(isAlnum(c) || c == '_') {
				return s, &Error{Code: ErrBadTPName, Arg: 1, Off: i, Errno: syscall.EINVAL}
			}
		}
	}
	return s, nil
}

// Target checks a removal's argv[0] like dyn_event_release: a '-' must be
// followed by ':', other letters need a ':' somewhere, and a spec without
// a group must name an event. It returns the group (hasGroup when the
// spec has a '/') and the event ("" for every event of the group). A
// malformed removal is EINVAL, with nothing logged.
func (r *Removal) Target() (group, event string, hasGroup bool, errno syscall.Errno) {
	if r.Colon.Value == "" || (r.Kind == "-" && r.Prefix.Value != "") {
		return "", "", false, syscall.EINVAL
	}
	hasGroup = r.Sep.Value != ""
	if !hasGroup && r.Event.Value == "" {
		return "", "", false, syscall.EINVAL
	}
	return r.Group.Value, r.Event.Value, hasGroup, 0
}

// ClaimsUprobe reports whether trace_uprobe's create function takes argv[1]
// as its place: it contains a '/', and its last ':' is followed by a
// decimal digit. Anything else is "not mine" (no error_log entry).
func ClaimsUprobe(arg string) bool {
	if strings.IndexByte(arg, '/') < 0 {
		return false
	}
	c := strings.LastIndexByte(arg, ':')
	return c >= 0 && c+1 < len(arg) && isDigit(arg[c+1])
}

// UprobeSite is what a checked uprobe place names.
type UprobeSite struct {
	Path   string // as typed: what the readback shows
	Offset uint64 // file offset of the probed instruction
	RefCtr uint64 // reference counter (semaphore) offset, 0 for none
	Return bool   // "%return" suffix
}

// Site checks the text after the path like trace_uprobe's create function,
// after its path lookup: the reference counter first (REFCNT_OPEN_BRACE one
// past the end without a ')', BAD_REFCNT_SUFFIX at text after the ')',
// BAD_REFCNT after the '(' when kstrtoul refuses it), then the suffix
// (BAD_ADDR_SUFFIX at the '%' unless it is exactly "%return"), then the
// offset (BAD_UPROBE_OFFS after the ':'). Numbers that overflow fail with
// ERANGE, other bad numbers with EINVAL. Errors are attributed to argv[1].
func (p *UprobePlace) Site(arg string) (UprobeSite, *Error) {
	s := UprobeSite{Path: p.Path.Value}
	if rc := p.RefCtr; rc != nil {
		switch {
		case !rc.Close:
			return s, &Error{Code: ErrRefcntOpenBrace, Arg: 1, Off: len(arg), Errno: syscall.EINVAL}
		case rc.Trail.Value != "":
			return s, &Error{Code: ErrBadRefcntSuffix, Arg: 1, Off: rc.Trail.Pos.Offset, Errno: syscall.EINVAL}
		}
		v, err := ParseUint64(rc.Offset.Value, 0)
		if err != nil {
			// The caret is after the '(': the first one after the path.
			open := len(p.Path.Value) + 1 + strings.IndexByte(arg[len(p.Path.Value)+1:], '(')
			return s, &Error{Code: ErrBadRefcnt, Arg: 1, Off: open + 1, Errno: kstrtoErrno(err)}
		}
		s.RefCtr = v
	}
	if p.Suffix != nil {
		if p.Suffix.Text != "return" {
			return s, &Error{Code: ErrBadAddrSuffix, Arg: 1, Off: p.Suffix.Pos.Offset, Errno: syscall.EINVAL}
		}
		s.Return = true
	}
	v, err := ParseUint64(p.Offset.Value, 0)
	if err != nil {
		return s, &Error{Code: ErrBadUprobeOffs, Arg: 1, Off: len(p.Path.Value) + 1, Errno: kstrtoErrno(err)}
	}
	s.Offset = v
	return s, nil
}

// kstrtoErrno is the errno a kstrto*() failure returns.
func kstrtoErrno(err error) syscall.Errno {
	if errors.Is(err, ErrRange) {
		return syscall.ERANGE
	}
	return syscall.EINVAL
}
