package grammar

import (
	"github.com/alecthomas/participle/v2/lexer"
)

// The syntax of probe-definition lines as participle grammars: one
// annotated struct per construct of the synopsis in kprobetrace.rst (and
// fprobetrace.rst, uprobetracer.rst, eprobes):
//
//	p[:[GRP/][EVENT]] [MOD:]SYM[+offs]|MEMADDR [FETCHARGS]    : set a probe
//	r[MAXACTIVE][:[GRP/][EVENT]] [MOD:]SYM[+0] [FETCHARGS]     : set a return probe
//	p[:[GRP/][EVENT]] [MOD:]SYM[+0]%return [FETCHARGS]         : set a return probe
//	f[MAXACTIVE][:[GRP/][EVENT]] SYM[%return] [FETCHARGS]      : set an fprobe
//	t[:[GRP/][EVENT]] TRACEPOINT [FETCHARGS]                   : set a tracepoint probe
//	p|r[:[GRP/][EVENT]] PATH:OFFSET[%return][(REF_CTR_OFFSET)] : set a uprobe
//	e[:[GRP/][EVENT]] SYSTEM.EVENT|SYSTEM/EVENT [FETCHARGS]    : set an event probe
//	-:[GRP/][EVENT]                                            : clear a probe
//
// A line is split into argv on whitespace first (Split, the kernel's
// argv_split), and each argv entry is parsed on its own, as the kernel
// parses it: argv[0] is a Head, argv[1] a place, the others fetch
// arguments (FetchArg, in fetcharg.go). Each construct has its lexer
// (lexer.go), which finds the separators the kernel looks for.
//
// The grammars are as permissive as the kernel: a symbol, group or
// register name is whatever text lies between the separators, because the
// kernel checks names later, or not at all. What the kernel checks, and in
// which order, is in check.go, over these structs and their tokens'
// positions (the offsets inside the argv entry that carets point at).

// Head is argv[0] of a command: KIND[MAXACTIVE][:[GRP/][EVENT]].
type Head struct {
	// Kind is the command letter: p, r, f, t, u, e, or '-' for a removal.
	Kind string `parser:"@Kind"`
	// Prefix is the text between the letter and the first ':': a
	// maxactive count when it starts with a digit, otherwise ignored.
	Prefix lexer.Token `parser:"@Prefix?"`
	// Colon is the ':' that starts the event spec (maybe empty).
	Colon lexer.Token `parser:"( @':':Punct"`
	Event *EventName  `parser:"  @@? )?"`
}

// EventName is [GRP/][EVENT], or GRP.EVENT: the first '/' separates the
// group from the event; without a '/', the first '.' does.
type EventName struct {
	Group lexer.Token `parser:"( @Group?"`
	Sep   lexer.Token `parser:"  @('/':Punct | '.':Punct) )?"`
	Event lexer.Token `parser:"@Event?"`
}

// KprobePlace is argv[1] of a p or r command: MEMADDR, or
// [MOD:]SYM[+offs|-offs][%return].
type KprobePlace struct {
	Addr *Address `parser:"(  @@"`
	// Uprobe is a place with both a '/' and a ':': not a kprobe's.
	Uprobe *UprobePlace `parser:" | @@"`
	Module *Module      `parser:" | @@?"`
	Symbol lexer.Token  `parser:"    @Symbol?"`
	// Offset is +OFFS or -OFFS, sign included: the text from the first
	// '+' or '-' up to the '%'.
	Offset lexer.Token `parser:"    @Offset?"`
	Suffix *Suffix     `parser:"    @@? )"`
}

// Address is a whole place kstrtoul (base 0) accepts.
type Address struct {
	Value lexer.Token `parser:"@Addr"`
}

// Module is the MOD: of MOD:SYM (the text up to the first ':').
type Module struct {
	Name  lexer.Token `parser:"@Module?"`
	Colon lexer.Token `parser:"@':':Punct"`
}

// Suffix is '%' and the text after it, which must be "return".
type Suffix struct {
	Pos  lexer.Position
	Text string `parser:"'%':Punct @Suffix?"`
}

// FprobePlace is argv[1] of an f or t command: SYM[%return] or
// TRACEPOINT.
type FprobePlace struct {
	Symbol lexer.Token `parser:"@Symbol?"`
	Suffix *Suffix     `parser:"@@?"`
}

// UprobePlace is argv[1] of a uprobe: PATH:OFFSET[%return][(REF_CTR_OFFSET)].
// The kernel cuts the reference counter off first (from the first '('
// after the path), so a "%return" must come before it; text after the ')'
// (a "%return" there included) is the RefCtr's Trail.
type UprobePlace struct {
	Path   lexer.Token `parser:"@Path"`
	Colon  bool        `parser:"( @':':Punct"`
	Offset lexer.Token `parser:"  @Offset?"`
	Suffix *Suffix     `parser:"  @@?"`
	RefCtr *RefCtr     `parser:"  @@? )?"`
}

// RefCtr is a uprobe's (REF_CTR_OFFSET) and any text after the ')'.
type RefCtr struct {
	Offset lexer.Token `parser:"'(':Punct @Text?"`
	Close  bool        `parser:"( @')':Punct"`
	Trail  lexer.Token `parser:"  @Text? )?"`
}

// EprobePlace is argv[1] of an e command: SYSTEM.EVENT or SYSTEM/EVENT,
// split like an event name.
type EprobePlace struct {
	Event *EventName `parser:"@@?"`
}

// Removal is argv[0] of a removal command: -:[GRP/][EVENT], which
// dynamic_events also takes as !...:[GRP/][EVENT]. Unlike an event name,
// only a '/' separates the group (dyn_event_release).
type Removal struct {
	Kind   string      `parser:"@Kind"`
	Prefix lexer.Token `parser:"@Prefix?"`
	Colon  lexer.Token `parser:"( @':':Punct"`
	Group  lexer.Token `parser:"  ( @Group?"`
	Sep    lexer.Token `parser:"    @'/':Punct )?"`
	Event  lexer.Token `parser:"  @Event? )?"`
}
