package grammar

import "syscall"

// TooManyArgsMode is how a kernel treats a line with more than MaxTraceArgs
// fetch arguments (after $arg* expansion).
type TooManyArgsMode int

const (
	// ArgsIgnoreExtra parses the first MaxTraceArgs arguments and silently
	// drops the rest (6.1).
	ArgsIgnoreExtra TooManyArgsMode = iota
	// ArgsE2BIG fails the write with E2BIG and logs nothing (6.6 .. 6.14).
	ArgsE2BIG
	// ArgsLogTooMany logs TOO_MANY_ARGS at argv[2] and fails with EINVAL
	// (6.15 and later).
	ArgsLogTooMany
)

// MaxTraceArgs is the kernel's MAX_TRACE_ARGS.
const MaxTraceArgs = 128

// Dialect is one row of the per-kernel difference table, keyed by kernel
// release (major.minor). Every field was checked against the pinned kernel
// of that row by booting it (tools/vmsh); a field's comment says what the
// two rows do. Code that must behave like "the kernel" reads its dialect
// instead of testing version numbers.
type Dialect struct {
	Name         string // "6.1", "6.12"
	Major, Minor int

	// MaxArgStrLen is MAX_ARGSTR_LEN, the longest fetch-argument body
	// (after "name="): 63 on both pinned kernels (a 64-byte body is
	// ARG_TOO_LONG); upstream raised it to 255 later.
	MaxArgStrLen int
	// ArgTooLongErrno is the errno of ARG_TOO_LONG: EINVAL on 6.1, E2BIG
	// on 6.12 (the parser's -E2BIG reaches the write).
	ArgTooLongErrno syscall.Errno
	// TooManyArgs: 6.1 ignores arguments past the 128th; 6.12 fails with
	// E2BIG and no error_log entry.
	TooManyArgs TooManyArgsMode

	// BTFArgs: $arg*, BTF parameter names, "->" fields, $argN renamed to
	// the parameter name, BTF-typed $retval (CONFIG_PROBE_EVENTS_BTF_ARGS
	// and >= 6.5). 6.1: no ($arg* is BAD_VAR); 6.12: yes.
	BTFArgs bool
	// RetprobeArgN: $argN on return probes (saved at function entry).
	// 6.1: no (BAD_VAR); 6.12: yes.
	RetprobeArgN bool
	// Symstr: the "symstr" type. Both rows accept it.
	Symstr bool
	// NeedStringType: $comm / immediate strings with a non-string type log
	// NEED_STRING_TYPE. 6.12 does; 6.1 fails with EINVAL and logs nothing.
	NeedStringType bool
	// CharType: the "char" fetch type exists. 6.1: no (BAD_TYPE);
	// 6.12: yes.
	CharType bool
	// StickyArgOffset: argument errors found after the fetch part was
	// parsed (string, bitfield, array checks) put the caret where the
	// fetch parse stopped (inside the outermost dereference, after the last
	// BTF member) instead of at the body start. 6.1: no; 6.12: yes.
	StickyArgOffset bool
	// FetchOverflowE2BIG: running out of fetch instructions while adding
	// the store or array step fails with E2BIG instead of EINVAL. 6.1: no;
	// 6.12: yes.
	FetchOverflowE2BIG bool
	// DentryArgs: the %pd / %pD pseudo types are rewritten to dentry name
	// fetches. 6.12: yes; 6.1: no ("%pd" is BAD_TYPE).
	DentryArgs bool

	// Fprobe: f and t lines in dynamic_events. 6.1: no (the write fails
	// with EINVAL and logs nothing); 6.12: yes.
	Fprobe bool
	// FprobeMaxactive: f<N> is parsed as a maxactive (only valid with an
	// exit probe, BAD_MAXACT_TYPE otherwise) and read back as f<N>. 6.12.
	FprobeMaxactive bool
	// TPNameCheck: t lines check the tracepoint name characters
	// (BAD_TP_NAME). 6.12 (backported): yes.
	TPNameCheck bool
	// SanitizeStar: automatic event names also turn '*' into '_'
	// ("f vfs_rea*" -> vfs_rea___entry, "p nomod:foo*" -> p_nomod_foo__0).
	// 6.12: yes; 6.1: no ("p nomod:foo*" -> p_nomod_foo*_0).
	SanitizeStar bool

	// UnknownSymbolErrno is the errno when argv[1] names no symbol
	// (BAD_PROBE_ADDR): ENOENT on 6.1, EINVAL on 6.12.
	UnknownSymbolErrno syscall.Errno
	// NonUniqSymbolErrno is the errno for NON_UNIQ_SYMBOL: EADDRNOTAVAIL
	// on 6.1, EINVAL on 6.12. Both kernels log NON_UNIQ_SYMBOL.
	NonUniqSymbolErrno syscall.Errno
	// RetprobeEntryFirst: a return probe's function-entry check
	// (BAD_RETPROBE) runs before the symbol is checked for uniqueness, so
	// "r SYM+4" on a non-unique SYM is BAD_RETPROBE (6.1's backport of
	// NON_UNIQ_SYMBOL); otherwise NON_UNIQ_SYMBOL comes first.
	RetprobeEntryFirst bool
	// MonotonicEventIDs: a new event takes the next never-used type ID
	// (register_trace_event's next_event_type++, 6.1), so a removed
	// event's ID is not reused until the IDs run out; otherwise the lowest
	// free ID is taken (6.12's IDA).
	MonotonicEventIDs bool
	// FirstEventID is the ID the kernel gives its first dynamic event: the
	// number of its built-in trace events plus the fixed types before
	// them, measured by booting it (6.1: 1392, 6.12: 1554).
	FirstEventID int

	// FilterFunction: event filters take ".function" on an address field
	// ("ip.function == vfs_read"). 6.12: yes; 6.1: no (the '.' is
	// INVALID_OP).
	FilterFunction bool
	// FilterCPUs: event filters take CPUS{list} values, and
	// "__data_loc cpumask_t" fields are cpumasks. 6.12: yes; 6.1: no
	// ("CPUS{0}" is INVALID_VALUE).
	FilterCPUs bool
	// EprobeSystemPrefix: a removal's SYSTEM.EVENT token matches an event
	// probe whose attached system starts with SYSTEM ("-:ep
	// sch.sched_switch" removes an eprobe on sched.sched_switch). 6.12:
	// yes; 6.1: no, the system must be equal.
	EprobeSystemPrefix bool
	// FilterStacktrace: "stacktrace" and "STACKTRACE" are generic fields.
	// 6.12: yes; 6.1: no (FIELD_NOT_FOUND).
	FilterStacktrace bool
	// FilterDanglingOp: a filter whose last operator ("&&", "||", and any
	// "!" after it) has no predicate after it is INVALID_FILTER ("Meaningless
	// filter expression") at its end. 6.1: yes; 6.12: no, the operator is
	// ignored (unless it leaves an "||" unresolved: "a || b &&" fails with
	// EINVAL and no error code).
	FilterDanglingOp bool
	// TriggerFilterLog: a trigger's "if" filter that fails logs its error
	// in error_log ("event filter parse error"). 6.12: yes; 6.1: no, the
	// write fails with the errno alone.
	TriggerFilterLog bool
	// HistNoHitcount: hist triggers take nohitcount/NOHC and
	// hitcount.MODIFIER value columns, and refuse .percent and .graph
	// on values as 6.12.95 does (6.1.192 takes them; both refuse .log2,
	// .buckets, .sym, .sym-offset and .syscall on values). Measured in
	// the VM. 6.12: yes.
	HistNoHitcount bool
	// Log2Wraps: a hist key's .log2 of a value above 2^63 (a negative
	// number, sign-extended) is 0, where it is 64 elsewhere. The kernel's
	// ilog2(roundup_pow_of_two(v)) shifts 1 left by 64 there, which x86
	// does as a shift by 0 in 6.12.95's build and which 6.1.192's build
	// folds into 64 (measured in the VM: an s8 of -1, -2, -28, -127, -128
	// and an s16 of -32767, -32768 read "~ 2^0" on 6.12, "~ 2^64" on 6.1;
	// 0 reads "~ 2^0" on both). 6.12: yes.
	Log2Wraps bool

	// messages overrides the newest upstream message text of a code.
	messages map[Code]string
}

// Message returns the error_log message text of c on this kernel.
func (d *Dialect) Message(c Code) string {
	if d != nil {
		if m, ok := d.messages[c]; ok {
			return m
		}
	}
	return c.Message()
}

// dialects is the difference table, oldest first.
var dialects = []*Dialect{
	{
		Name: "6.1", Major: 6, Minor: 1,
		MaxArgStrLen:       63,
		ArgTooLongErrno:    syscall.EINVAL,
		TooManyArgs:        ArgsIgnoreExtra,
		BTFArgs:            false,
		RetprobeArgN:       false,
		Symstr:             true,
		NeedStringType:     false,
		CharType:           false,
		StickyArgOffset:    false,
		FetchOverflowE2BIG: false,
		DentryArgs:         false,
		Fprobe:             false,
		FprobeMaxactive:    false,
		TPNameCheck:        false,
		SanitizeStar:       false,
		UnknownSymbolErrno: syscall.ENOENT,
		NonUniqSymbolErrno: syscall.EADDRNOTAVAIL,
		RetprobeEntryFirst: true,
		MonotonicEventIDs:  true,
		FirstEventID:       1392,
		FilterDanglingOp:   true,
		messages: map[Code]string{
			ErrBadMaxactType: "Maxactive is not for kprobe",
			ErrFileOnKprobe:  "File offset is not available with kprobe",
		},
	},
	{
		Name: "6.12", Major: 6, Minor: 12,
		MaxArgStrLen:       63,
		ArgTooLongErrno:    syscall.E2BIG,
		TooManyArgs:        ArgsE2BIG,
		BTFArgs:            true,
		RetprobeArgN:       true,
		Symstr:             true,
		NeedStringType:     true,
		CharType:           true,
		StickyArgOffset:    true,
		FetchOverflowE2BIG: true,
		DentryArgs:         true,
		Fprobe:             true,
		FprobeMaxactive:    true,
		TPNameCheck:        true,
		SanitizeStar:       true,
		UnknownSymbolErrno: syscall.EINVAL,
		NonUniqSymbolErrno: syscall.EINVAL,
		FirstEventID:       1554,
		FilterFunction:     true,
		FilterCPUs:         true,
		FilterStacktrace:   true,
		TriggerFilterLog:   true,
		HistNoHitcount:     true,
		Log2Wraps:          true,
		EprobeSystemPrefix: true,
		messages: map[Code]string{
			ErrBadVar:       "Invalid $-valiable specified",
			ErrFileOnKprobe: "File offset is not available with kprobe",
		},
	},
}

// Latest is 6.12's row: the newest syntax ktrace runs through eBPF.
var Latest = dialects[len(dialects)-1]

// DialectFor returns the row of the newest known release at or below
// major.minor, or the oldest row for anything older.
func DialectFor(major, minor int) *Dialect {
	best := dialects[0]
	for _, d := range dialects {
		if d.Major < major || (d.Major == major && d.Minor <= minor) {
			best = d
		}
	}
	return best
}

// Dialects returns every row of the table, oldest first.
func Dialects() []*Dialect {
	return append([]*Dialect(nil), dialects...)
}
