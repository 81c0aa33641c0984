package fetchargs

import (
	"syscall"

	"github.com/cilium/ebpf/btf"

	"github.com/ktrace-dev/ktrace/grammar"
	"github.com/ktrace-dev/ktrace/kernel"
)

// ProbeKind is the kind of probe whose arguments are parsed.
type ProbeKind int

const (
	KProbe ProbeKind = iota // p/r lines: kprobe or kretprobe
	FProbe                  // f lines: fprobe entry or exit
	TProbe                  // t lines: tracepoint probe
	UProbe                  // uprobe and uretprobe lines: user-space probes
	EProbe                  // e lines: event probes, reading another event's record
)

// EventField is a field of the event an event probe is attached to, as
// its format file describes it (the common fields are not among them).
type EventField struct {
	Name   string
	Type   string // the C type, array suffix included ("char[16]")
	Offset int
	Size   int
	Signed bool
}

// Context describes the probe whose arguments are parsed. One Context
// serves one probe definition: PrepareArgs first, then Parse for each token
// in order. It caches the function's BTF prototype between calls, as the
// kernel's parse context does, and is not safe for concurrent use.
//
// Func is the function whose BTF prototype types the arguments: the probed
// symbol for kprobes and fprobes (empty for address probes), and the
// tracepoint's stub "__probestub_<name>" for tprobes.
type Context struct {
	Model   *kernel.Model
	Dialect *grammar.Dialect
	Kind    ProbeKind
	Return  bool   // TPARG_FL_RETURN: symbol-based return probe, fprobe exit or uretprobe
	Entry   bool   // TPARG_FL_FENTRY: kprobe at function entry (symbol-based, not return)
	Func    string // probed function (BTF lookups); "" for address probes
	// Fields are the attached event's fields (event probes): what
	// $FIELD names.
	Fields []EventField

	btfDone bool
	btfErr  error
	proto   *btf.FuncProto
	params  []btf.FuncParam
	pending []*grammar.Error // error_log entries PrepareArgs wrote without failing
	// logRewrites maps argv indices to the text Linux's logged command
	// shows after %pd/%pD rewriting (only when no $arg expansion copied
	// the argument list first).
	logRewrites map[int]string
	rulesSet    bool
	rules       rules
	prevIdx     prevIndex
}

// prevIndex remembers, for the argument list Parse was last given (each
// call normally passes the previous list plus the argument it accepted),
// the total size of the arguments and, past a few of them, their names.
// The kernel scans every earlier argument for both checks; with up to 128
// arguments per probe that is quadratic, so ktrace keeps the running
// values instead. Arguments do not change after Parse returns them.
type prevIndex struct {
	args  []*Arg // the list indexed; shares the caller's backing array
	last  *Arg   // args[len(args)-1] when it was indexed
	size  int    // sum of args[i].Size
	names map[string]struct{}
}

// prevNamesMin is the list length from which names are looked up in a set
// rather than scanned.
const prevNamesMin = 16

// update makes x describe prev, extending it when prev continues the list
// indexed so far and rebuilding it otherwise.
func (x *prevIndex) update(prev []*Arg) {
	n := len(x.args)
	if n > len(prev) || (n > 0 && (&x.args[n-1] != &prev[n-1] || x.last != prev[n-1])) {
		*x = prevIndex{}
		n = 0
	}
	for _, a := range prev[n:] {
		x.size += a.Size
	}
	if len(prev) >= prevNamesMin {
		if x.names == nil {
			x.names = make(map[string]struct{}, 2*len(prev))
			n = 0
		}
		for _, a := range prev[n:] {
			x.names[a.Name] = struct{}{}
		}
	}
	x.args = prev
	if len(prev) > 0 {
		x.last = prev[len(prev)-1]
	}
}

// hasName reports whether an argument of the indexed list is named name.
func (x *prevIndex) hasName(name string) bool {
	if x.names != nil {
		_, ok := x.names[name]
		return ok
	}
	for _, a := range x.args {
		if a.Name == name {
			return true
		}
	}
	return false
}

// The kernel's TPARG_FL_* parse flags.
const (
	flReturn = 1 << 0
	flKernel = 1 << 1
	flFentry = 1 << 2
	flTevent = 1 << 3
	flFprobe = 1 << 5
	flTpoint = 1 << 6
	flLocMsk = 0x1f
)

func (c *Context) flags() uint {
	if c.Kind == EProbe {
		return flKernel | flTevent
	}
	if c.Kind == UProbe {
		// TPARG_FL_USER (0): no KERNEL flag, so no BTF, no symbols and
		// no bound on $stackN.
		if c.Return {
			return flReturn
		}
		return 0
	}
	f := uint(flKernel)
	switch c.Kind {
	case FProbe:
		f |= flFprobe
		if c.Return {
			f |= flReturn
		} else {
			f |= flFentry
		}
	case TProbe:
		f |= flFprobe | flTpoint | flFentry
	default:
		if c.Return {
			f |= flReturn
		}
		if c.Entry && !c.Return {
			f |= flFentry
		}
	}
	return f
}

func isFunctionEntry(f uint) bool { return f&flLocMsk == flKernel|flFentry }

func isFunctionReturn(f uint) bool { return f&flLocMsk == flKernel|flReturn }

// rules are the per-kernel behaviours of the argument parser. Most come
// straight from the dialect row; the rest changed together with the BTF
// argument rework (6.5) and are keyed on the dialect's version. Each was
// checked on the pinned 6.1 and 6.12 kernels.
type rules struct {
	maxArgStrLen int  // MAX_ARGSTR_LEN: longest argument body
	btfArgs      bool // BTF names, $arg*, $argN rewriting, typed $retval, argument names from bodies
	// newParser: the argument parser of the BTF rework (6.5): $retval is a
	// prefix match, $arg*/$argN are scanned before parsing, identifiers
	// are BTF names (NOSUP_BTFARG when BTF arguments are compiled out).
	newParser bool
	charType  bool // the "char" fetch type exists
	// needStringLog: $comm/immediate strings with a non-string type log
	// NEED_STRING_TYPE; without it the write fails with EINVAL and no log.
	needStringLog bool
	// argAnywhere: $argN is parsed on any kernel probe and saved at entry
	// for return probes (EDATA); without it only function-entry kprobes
	// accept $argN and everything else reports BAD_VAR.
	argAnywhere bool
	// stickyOffset: errors found after the fetch part was parsed (string,
	// bitfield, array checks) use the parse position the fetch part left
	// behind (inside the outermost dereference, or after the last BTF
	// member); without it they are relative to the body start.
	stickyOffset bool
	dentryArgs   bool // :%pd / :%pD rewriting
	// tooManyArgsE2BIG: more than MAX_TRACE_ARGS arguments fail with E2BIG
	// and no log; without it the extra arguments are silently dropped.
	tooManyArgsE2BIG bool
	argTooLongErrno  syscall.Errno // errno of ARG_TOO_LONG
	// e2bigOverflow: running out of fetch instructions while adding the
	// store or array step fails with E2BIG (else EINVAL).
	e2bigOverflow bool
}

// rulesFor derives the parser rules from the dialect. A nil dialect means
// grammar.Latest.
func rulesFor(d *grammar.Dialect) rules {
	if d == nil {
		d = grammar.Latest
	}
	since65 := d.Major > 6 || (d.Major == 6 && d.Minor >= 5)
	r := rules{
		maxArgStrLen:     d.MaxArgStrLen,
		btfArgs:          d.BTFArgs,
		newParser:        since65,
		charType:         since65,
		needStringLog:    d.NeedStringType,
		argAnywhere:      d.RetprobeArgN,
		stickyOffset:     since65,
		dentryArgs:       d.DentryArgs,
		tooManyArgsE2BIG: d.TooManyArgs == grammar.ArgsE2BIG,
		argTooLongErrno:  d.ArgTooLongErrno,
		e2bigOverflow:    since65,
	}
	if r.maxArgStrLen <= 0 {
		r.maxArgStrLen = 63
	}
	if r.argTooLongErrno == 0 {
		r.argTooLongErrno = syscall.EINVAL
	}
	return r
}

func (c *Context) rulesOf() rules {
	if !c.rulesSet {
		c.rules = rulesFor(c.Dialect)
		c.rulesSet = true
	}
	return c.rules
}

// queryBTF is query_btf_context: looks the function's prototype up once.
// It reports false when there is no usable prototype (no BTF, unknown or
// address probe).
func (c *Context) queryBTF() bool {
	if !c.btfDone {
		c.btfDone = true
		switch {
		case c.Func == "":
			c.btfErr = errNoFunc
		case c.Model == nil:
			c.btfErr = errNoModel
		case !c.rulesOf().btfArgs:
			c.btfErr = errNoBTFArgs
		default:
			_, proto, err := c.Model.FuncProto(c.Func)
			if err != nil {
				c.btfErr = err
			} else {
				c.proto = proto
				c.params = proto.Params
				if c.Kind == TProbe && len(c.params) > 0 {
					c.params = c.params[1:] // the stub's hidden first argument
				}
			}
		}
	}
	return c.btfErr == nil
}

// btfLoaded reports whether an earlier step of this probe loaded the
// function's prototype (the kernel's ctx->btf is set).
func (c *Context) btfLoaded() bool { return c.btfDone && c.btfErr == nil }

func (c *Context) spec() *btf.Spec {
	if c.Model == nil {
		return nil
	}
	return c.Model.BTF()
}

func (c *Context) paramMaxStack() uint64 {
	if c.Model != nil && c.Model.Arch() != nil && c.Model.Arch().ParamMaxStack > 0 {
		return uint64(c.Model.Arch().ParamMaxStack)
	}
	return 2048
}

// LoggedArgv returns the argv as Linux's error_log shows it for this
// probe after PrepareArgs: %pd/%pD rewriting happens in place in the
// kernel's argument array, so unless $arg expansion made a copy first the
// logged command shows the rewritten tokens.
func (c *Context) LoggedArgv(argv []string) []string {
	out := append([]string(nil), argv...)
	for i, s := range c.logRewrites {
		if i >= 0 && i < len(out) {
			out[i] = s
		}
	}
	return out
}
