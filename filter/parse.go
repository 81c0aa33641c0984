package filter

import (
	"fmt"
	"strings"
	"syscall"

	"github.com/ktrace-dev/ktrace/grammar"
)

// Op is a comparison operator, in the kernel's matching order ("<=" is
// tried before "<").
type Op int

const (
	OpGlob Op = iota // ~
	OpNE             // !=
	OpEQ             // ==
	OpLE             // <=
	OpLT             // <
	OpGE             // >=
	OpGT             // >
	OpBand           // &
)

var opText = [...]string{"~", "!=", "==", "<=", "<", ">=", ">", "&"}

func (o Op) String() string { return opText[o] }

// MaxStringLen is MAX_FILTER_STR_VAL: a quoted value must be shorter.
const MaxStringLen = 256

// numBufLen is the size of the kernel's number buffer: a number (or
// address) token must be shorter.
const numBufLen = 24

// Symbols resolves function names and addresses for ".function"
// predicates, as kallsyms_lookup_name and kallsyms_lookup_size_offset do.
type Symbols interface {
	// LookupName returns the address of the symbol name, ok false when
	// there is none.
	LookupName(name string) (addr uint64, ok bool)
	// SymbolExtent returns the start and size of the symbol containing
	// addr.
	SymbolExtent(addr uint64) (start, size uint64, ok bool)
}

// Env is what parsing needs besides the expression and the event.
type Env struct {
	Dialect *grammar.Dialect
	// CPUs is the number of possible CPUs (nr_cpu_ids): CPUS{} lists may
	// only name CPUs below it.
	CPUs int
	// Symbols resolves ".function" values; nil finds no function.
	Symbols Symbols
}

// Error is a rejected filter: the kernel's error code (FiltNone when the
// kernel reports no code and prints "Error: (0)"), the caret position as
// error_log shows it, and the errno of the write.
type Error struct {
	Code  grammar.FilterCode
	Pos   int
	Errno syscall.Errno
}

func (e *Error) Error() string {
	if e.Code == grammar.FiltNone {
		return fmt.Sprintf("filter: %v", e.Errno)
	}
	return fmt.Sprintf("filter: %s at column %d", e.Code.Message(), e.Pos)
}

// Message is the error_log message: the code's text, or "Error".
func (e *Error) Message() string {
	if e.Code == grammar.FiltNone {
		return grammar.FiltErrno.Message()
	}
	return e.Code.Message()
}

// LogPos is the caret column of the error_log entry (0 without a code).
func (e *Error) LogPos() int {
	if e.Code == grammar.FiltNone {
		return 0
	}
	return e.Pos
}

// Text is what the filter file shows after expr failed with e, without
// the newline the file adds after it: the expression, then either a caret
// line and "parse_error: MSG", or "Error: (0)".
func (e *Error) Text(expr string) string {
	if e.Code == grammar.FiltNone {
		return expr + "\nError: (0)\n"
	}
	pos := e.Pos
	if pos > len(expr) {
		pos = len(expr)
	}
	return expr + "\n" + strings.Repeat(" ", pos) + "^\nparse_error: " + e.Code.Message() + "\n"
}

// Node is a node of the expression tree: *And, *Or, *Not or *Pred.
type Node interface {
	node()
	// Position is the index in the expression where the node starts.
	Position() int
}

// And is "X && Y".
type And struct{ X, Y Node }

// Or is "X || Y".
type Or struct{ X, Y Node }

// Not is "!X".
type Not struct {
	Pos int
	X   Node
}

func (*And) node()  {}
func (*Or) node()   {}
func (*Not) node()  {}
func (*Pred) node() {}

func (n *And) Position() int  { return n.X.Position() }
func (n *Or) Position() int   { return n.X.Position() }
func (n *Not) Position() int  { return n.Pos }
func (p *Pred) Position() int { return p.Pos }

// Kind is how a predicate is evaluated (the kernel's filter_pred_fn).
type Kind int

const (
	KindNop        Kind = iota // never matches (a field size other than 1, 2, 4, 8)
	KindEq                     // ==, != on the raw bits of the field size
	KindCmp                    // < <= > >= & on a signed or unsigned field
	KindNumCPUMask             // a numeric field against a CPUS{} list of several CPUs
	KindComm                   // current->comm
	KindString                 // a static char array
	KindStrLoc                 // __data_loc string
	KindStrRelLoc              // __rel_loc string
	KindPChar                  // char * to kernel memory
	KindPCharUser              // char * to user memory (.ustring)
	KindCPU                    // the current CPU against a number
	KindCPUCPUMask             // the current CPU against a CPUS{} list
	KindCPUMask                // a cpumask field against a CPUS{} list
	KindCPUMaskCPU             // a cpumask field against one CPU
	KindFunction               // .function: an address inside a function
)

// Pred is one predicate: FIELD[.ustring][.function] OP VALUE.
type Pred struct {
	Pos   int // index of the field name
	End   int // index just past the value
	Field *Field
	Op    Op
	Kind  Kind
	// Not inverts the comparison (!=, and "~ \"!pat\"").
	Not bool
	// Val is the number (truncated by the comparison to the field size),
	// the single CPU of a one-CPU list, or a function's start address.
	Val uint64
	// Val2 is a function's end address (exclusive).
	Val2 uint64
	// Mask is a CPUS{} list of more than one CPU, one bool per CPU.
	Mask []bool
	// Regex is the string pattern of string predicates.
	Regex *Regex
	// Text is the predicate as written.
	Text string
}

// Filter is a parsed filter.
type Filter struct {
	Expr string
	Root Node
	prog []progEntry
}

// Preds lists the predicates in program order (their order in the text).
func (f *Filter) Preds() []*Pred {
	out := make([]*Pred, len(f.prog))
	for i := range f.prog {
		out[i] = f.prog[i].pred
	}
	return out
}

// Branch describes the program's step after predicate i: when its
// result equals when, the program goes on at predicate next, else at
// i+1. Going on at len(Preds) means "match", at len(Preds)+1 "no match".
func (f *Filter) Branch(i int) (when bool, next int) {
	return f.prog[i].when, f.prog[i].target + 1
}

type progEntry struct {
	target int
	when   bool
	pred   *Pred
}

// ctype of the kernel's lib/ctype.c (Latin-1), for the characters the
// parser classifies.
func isSpace(c byte) bool { return c == ' ' || (c >= '\t' && c <= '\r') || c == 0xa0 }
func isDigit(c byte) bool { return c >= '0' && c <= '9' }
func isAlnum(c byte) bool {
	return isDigit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		(c >= 0xc0 && c != 0xd7 && c != 0xf7)
}

// StripEnds trims the text of a filter write the way the kernel does
// before parsing: the string ends at its first NUL, trailing whitespace
// is cut, leading whitespace is kept.
func StripEnds(s string) string {
	if i := strings.IndexByte(s, 0); i >= 0 {
		s = s[:i]
	}
	end := len(s)
	for end > 0 && isSpace(s[end-1]) {
		end--
	}
	return s[:end]
}

// Parse compiles expr (already stripped with StripEnds) for ev.
func Parse(expr string, ev *Event, env *Env) (*Filter, *Error) {
	nrParens, nrPreds, err := calcStack(expr)
	if err != nil {
		return nil, err
	}
	if nrPreds == 0 {
		return nil, &Error{Errno: syscall.EINVAL}
	}
	p := &parser{s: expr, ev: ev, env: env}
	return p.program(nrParens, nrPreds)
}

// calcStack is the kernel's first pass: balanced parentheses and quotes,
// and how many predicates and nesting levels there are.
func calcStack(s string) (parens, preds int, err *Error) {
	isPred := false
	open, maxOpen := 1, 1
	var quote byte
	lastQuote := 0
	at := func(i int) byte {
		if i < len(s) {
			return s[i]
		}
		return 0
	}
	i := 0
	for ; i < len(s); i++ {
		c := s[i]
		if isSpace(c) {
			continue
		}
		if quote != 0 {
			if c == quote {
				quote = 0
			}
			continue
		}
		switch c {
		case '\'', '"':
			quote, lastQuote = c, i
		case '|', '&':
			if at(i+1) == c {
				isPred = false
				continue
			}
		case '(':
			isPred = false
			open++
			if open > maxOpen {
				maxOpen = open
			}
			continue
		case ')':
			isPred = false
			if open == 1 {
				return 0, 0, &Error{Code: grammar.FiltTooManyClose, Pos: i, Errno: syscall.EPERM}
			}
			open--
			continue
		}
		if !isPred {
			preds++
			isPred = true
		}
	}
	if quote != 0 {
		return 0, 0, &Error{Code: grammar.FiltMissingQuote, Pos: lastQuote, Errno: syscall.ESRCH}
	}
	if open != 1 {
		// Find the unmatched '(' walking back from the end.
		level := open
		quote = 0
		for i--; i > 0; i-- {
			c := s[i]
			if quote != 0 {
				if c == quote {
					quote = 0
				}
				continue
			}
			switch c {
			case '(':
				if level == open {
					return 0, 0, &Error{Code: grammar.FiltTooManyOpen, Pos: i, Errno: syscall.ENOENT}
				}
				level--
			case ')':
				level++
			case '\'', '"':
				quote = c
			}
		}
		return 0, 0, &Error{Code: grammar.FiltTooManyOpen, Pos: 0, Errno: syscall.ENOENT}
	}
	return maxOpen, preds, nil
}

type parser struct {
	s   string
	ev  *Event
	env *Env
}

func (p *parser) at(i int) byte {
	if i >= 0 && i < len(p.s) {
		return p.s[i]
	}
	return 0
}

// Flags kept per parenthesis level.
const (
	flInvert = 1
	flAnd    = 2
	flOr     = 4
)

// tok is one token of the expression's structure, for building the tree.
type tok struct {
	kind byte // '(' ')' '!' '&' '|' 'p'
	pos  int
	pred *Pred
}

// program is the kernel's predicate_parse: it walks the expression once,
// parsing each predicate and building the branch program.
func (p *parser) program(nrParens, nrPreds int) (*Filter, *Error) {
	nrPreds += 2
	prog := make([]progEntry, nrPreds)
	inverts := make([]bool, nrPreds)
	stack := []int{0}
	invert := false
	n := 0
	ptr := 0
	var toks []tok
	done := false
	update := func(n int, inv bool) {
		t := prog[n].target
		s := prog[t].target
		prog[t].when = inv
		prog[t].target = n
		prog[n].target = s
	}
outer:
	for p.at(ptr) != 0 {
		next := ptr
		ptr++
		c := p.s[next]
		if isSpace(c) {
			continue
		}
		switch c {
		case '(':
			if len(stack)-1 > nrParens {
				return nil, &Error{Errno: syscall.EINVAL}
			}
			fl := 0
			if invert {
				fl = flInvert
			}
			stack = append(stack, fl)
			toks = append(toks, tok{kind: '(', pos: next})
			continue
		case '!':
			if b := p.at(next + 1); b != '=' && b != '~' {
				invert = !invert
				toks = append(toks, tok{kind: '!', pos: next})
				continue
			}
		}
		if n >= nrPreds {
			return nil, &Error{Code: grammar.FiltTooManyPreds, Pos: next, Errno: syscall.EPERM}
		}
		inverts[n] = invert
		prog[n].target = n - 1
		pred, length, err := p.pred(next, ptr)
		if err != nil {
			return nil, err
		}
		prog[n].pred = pred
		toks = append(toks, tok{kind: 'p', pos: next, pred: pred})
		ptr = next + length
		n++
		for {
			next = ptr
			ptr++
			c := p.at(next)
			if isSpace(c) {
				continue
			}
			switch c {
			case ')', 0:
			case '&', '|':
				if p.at(next+1) == c {
					ptr++
					break
				}
				return nil, &Error{Code: grammar.FiltTooManyPreds, Pos: next, Errno: syscall.EPERM}
			default:
				return nil, &Error{Code: grammar.FiltTooManyPreds, Pos: next, Errno: syscall.EPERM}
			}
			top := &stack[len(stack)-1]
			invert = *top&flInvert != 0
			if *top&flAnd != 0 {
				update(n-1, invert)
				*top &^= flAnd
			}
			if c == '&' {
				*top |= flAnd
				toks = append(toks, tok{kind: '&', pos: next})
				break
			}
			if *top&flOr != 0 {
				update(n-1, !invert)
				*top &^= flOr
			}
			if c == '|' {
				*top |= flOr
				toks = append(toks, tok{kind: '|', pos: next})
				break
			}
			if c == 0 {
				done = true
				break outer
			}
			if len(stack) == 1 {
				return nil, &Error{Code: grammar.FiltTooManyClose, Pos: ptr, Errno: syscall.EPERM}
			}
			stack = stack[:len(stack)-1]
			toks = append(toks, tok{kind: ')', pos: next})
		}
		continue
	}
	if !done {
		// The walk ended where a predicate was expected.
		if len(stack) != 1 {
			return nil, &Error{Code: grammar.FiltTooManyOpen, Pos: ptr, Errno: syscall.EPERM}
		}
		if n == 0 {
			return nil, &Error{Code: grammar.FiltNoFilter, Pos: ptr, Errno: syscall.EINVAL}
		}
		if p.env.Dialect.FilterDanglingOp {
			return nil, &Error{Code: grammar.FiltInvalidFilter, Pos: ptr, Errno: syscall.EINVAL}
		}
	}
	if len(stack) != 1 {
		return nil, &Error{Code: grammar.FiltTooManyOpen, Pos: ptr, Errno: syscall.EPERM}
	}
	if n == 0 {
		return nil, &Error{Code: grammar.FiltNoFilter, Pos: ptr, Errno: syscall.EINVAL}
	}
	prog[n] = progEntry{target: 1}
	prog[n+1] = progEntry{target: 0}
	prog[n-1].target = n
	prog[n-1].when = false
	for i := n - 1; i > 0; {
		i--
		t := prog[i].target
		if t < 0 {
			// An "||" left unresolved by a dangling "&&": the kernel's
			// program check (WARN_ON) rejects it without a code.
			return nil, &Error{Errno: syscall.EINVAL}
		}
		if prog[i].when == prog[t].when {
			prog[i].target = prog[t].target
		}
	}
	for i := 0; i < n; i++ {
		prog[i].when = inverts[i] != prog[i].when
		if prog[i].target <= i {
			return nil, &Error{Errno: syscall.EINVAL}
		}
	}
	f := &Filter{Expr: p.s, prog: prog[:n]}
	f.Root = buildTree(toks)
	return f, nil
}
