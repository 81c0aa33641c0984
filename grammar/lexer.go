package grammar

import (
	"io"

	"github.com/alecthomas/participle/v2/lexer"
)

// The lexer of probe-definition text: hand-written lexer.Definitions, one
// per construct (participle's regexp lexer ran about 20k lines/s; these
// lex an argv entry in tens of nanoseconds).
//
// The kernel splits a line into argv on whitespace (Split), then finds the
// parts of each entry with strchr()/strrchr()/strpbrk() in a fixed order:
// the first ':' of argv[0], then its first '/' (or, without one, its first
// '.'); in a kprobe place the first '%', then the first '+' or '-', then
// the first ':'; in a fetch argument the first '=', the first ':', the
// first '[', the last ')'... Those scans are what a lexer does here: each
// construct's lexer emits the separators the kernel looks for as
// punctuation tokens, and the text between them as one token named for
// its role (Group, Event, Symbol, Offset, Reg...). The grammar (syntax.go,
// fetcharg.go) then says how the parts make up the construct, and the
// checks (check.go) apply the kernel's rules to the parts, in the
// kernel's order, with the parts' positions for carets.

// Token types: one punctuation type for the separators, and the roles of
// the text between them.
const (
	tokPunct     lexer.TokenType = -(iota + 2)
	tokKind                      // argv[0][0]: the command letter
	tokPrefix                    // argv[0] between the letter and the first ':'
	tokGroup                     // GRP of GRP/EVENT or GRP.EVENT
	tokEvent                     // EVENT
	tokAddr                      // a whole place kstrtoul accepts
	tokModule                    // MOD of MOD:SYM
	tokSymbol                    // SYM
	tokOffset                    // +OFFS or -OFFS after a symbol (sign included)
	tokSuffix                    // the text after a place's '%'
	tokPath                      // a uprobe's PATH
	tokText                      // any other text
	tokName                      // an argument's NAME before '='
	tokReg                       // a register name after '%'
	tokField                     // a BTF name or member between '.' and '->'
	tokDerefOffs                 // the OFFS of +OFFS(...) (no sign, no 'u')
	tokUser                      // the 'u' of +uOFFS(...)
	tokImm                       // an immediate after '\\'
	tokStr                       // an immediate string after '\\"'
	tokBackslash                 // '\\'
	tokQuote                     // '"'
	tokType                      // a fetch type name
	tokBits                      // the 'b' of a bitfield type
	tokWidth                     // a bitfield's width
	tokBitoffs                   // a bitfield's bit offset
	tokContainer                 // a bitfield's container size
	tokCount                     // an array's element count
	tokUnclosed                  // the text after a '(' that has no ')'
)

var tokenNames = map[string]lexer.TokenType{
	"EOF":       lexer.EOF,
	"Punct":     tokPunct,
	"Kind":      tokKind,
	"Prefix":    tokPrefix,
	"Group":     tokGroup,
	"Event":     tokEvent,
	"Addr":      tokAddr,
	"Module":    tokModule,
	"Symbol":    tokSymbol,
	"Offset":    tokOffset,
	"Suffix":    tokSuffix,
	"Path":      tokPath,
	"Text":      tokText,
	"Name":      tokName,
	"Reg":       tokReg,
	"Field":     tokField,
	"DerefOffs": tokDerefOffs,
	"User":      tokUser,
	"Imm":       tokImm,
	"Str":       tokStr,
	"Backslash": tokBackslash,
	"Quote":     tokQuote,
	"Type":      tokType,
	"Bits":      tokBits,
	"Width":     tokWidth,
	"Bitoffs":   tokBitoffs,
	"Container": tokContainer,
	"Count":     tokCount,
	"Unclosed":  tokUnclosed,
}

// scanner cuts the text of one construct into tokens.
type scanner func(s string, t *tokenList)

// tokenList collects a construct's tokens.
type tokenList struct {
	s    string
	toks []lexer.Token
}

// add appends s[i:j] as a token of type typ (nothing when empty).
func (l *tokenList) add(typ lexer.TokenType, i, j int) {
	if j > i {
		l.always(typ, i, j)
	}
}

// always appends s[i:j] as a token of type typ, even when empty.
func (l *tokenList) always(typ lexer.TokenType, i, j int) {
	l.toks = append(l.toks, lexer.Token{
		Type:  typ,
		Value: l.s[i:j],
		Pos:   lexer.Position{Offset: i, Line: 1, Column: i + 1},
	})
}

// punct appends the one-byte separator at s[i].
func (l *tokenList) punct(i int) { l.add(tokPunct, i, i+1) }

// constructLexer is the lexer.Definition of one construct.
type constructLexer struct {
	scan scanner
}

func (constructLexer) Symbols() map[string]lexer.TokenType { return tokenNames }

func (d constructLexer) Lex(filename string, r io.Reader) (lexer.Lexer, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	return d.LexString(filename, string(b))
}

func (d constructLexer) LexString(_ string, s string) (lexer.Lexer, error) {
	l := tokenList{s: s, toks: make([]lexer.Token, 0, 8)}
	d.scan(s, &l)
	l.toks = append(l.toks, lexer.Token{Type: lexer.EOF, Pos: lexer.Position{Offset: len(s), Line: 1, Column: len(s) + 1}})
	return &tokenStream{toks: l.toks}, nil
}

// tokenStream hands out a lexed token slice.
type tokenStream struct {
	toks []lexer.Token
	i    int
}

func (t *tokenStream) Next() (lexer.Token, error) {
	tok := t.toks[t.i]
	if t.i < len(t.toks)-1 {
		t.i++
	}
	return tok, nil
}

// scanHead lexes argv[0]: the letter, the prefix up to the first ':', the
// ':' and the event spec.
func scanHead(s string, l *tokenList) { scanCommand(s, l, scanEventName) }

// scanRemoval lexes argv[0] of a removal: like a head, but only a '/'
// separates the group in the spec.
func scanRemoval(s string, l *tokenList) { scanCommand(s, l, scanSlashName) }

// scanCommand lexes the letter, the text up to the first ':', the ':',
// and the spec after it with spec.
func scanCommand(s string, l *tokenList, spec func(s string, i int, l *tokenList)) {
	if s == "" {
		return
	}
	l.add(tokKind, 0, 1)
	c := indexByteFrom(s, ':', 1)
	if c < 0 {
		l.add(tokPrefix, 1, len(s))
		return
	}
	l.add(tokPrefix, 1, c)
	l.punct(c)
	spec(s, c+1, l)
}

// scanSlashName lexes [GRP/][EVENT] starting at s[i], split at the first
// '/' only (dyn_event_release).
func scanSlashName(s string, i int, l *tokenList) {
	if sep := indexByteFrom(s, '/', i); sep >= 0 {
		l.add(tokGroup, i, sep)
		l.punct(sep)
		i = sep + 1
	}
	l.add(tokEvent, i, len(s))
}

// scanEventName lexes [GRP/][EVENT] or GRP.EVENT starting at s[i]: the
// first '/' separates, or without one the first '.'
// (traceprobe_parse_event_name).
func scanEventName(s string, i int, l *tokenList) {
	sep := indexByteFrom(s, '/', i)
	if sep < 0 {
		sep = indexByteFrom(s, '.', i)
	}
	if sep >= 0 {
		l.add(tokGroup, i, sep)
		l.punct(sep)
		i = sep + 1
	}
	l.add(tokEvent, i, len(s))
}

// scanKprobePlace lexes argv[1] of a kprobe in trace_kprobe's order: a
// whole kstrtoul number is an address; a place with a '/' and a ':' is a
// uprobe's; otherwise the first '%' starts the
// suffix, the first '+' or '-' before it the offset, and the first ':'
// before that separates the module.
func scanKprobePlace(s string, l *tokenList) {
	if _, err := ParseUint64(s, 0); err == nil {
		l.add(tokAddr, 0, len(s))
		return
	}
	if indexByteFrom(s, '/', 0) >= 0 && indexByteFrom(s, ':', 0) >= 0 {
		scanUprobePlace(s, l)
		return
	}
	end := indexByteFrom(s, '%', 0)
	if end < 0 {
		end = len(s)
	}
	sym := end
	for i := 0; i < end; i++ {
		if s[i] == '+' || s[i] == '-' {
			sym = i
			break
		}
	}
	if c := indexByteFrom(s[:sym], ':', 0); c >= 0 {
		l.add(tokModule, 0, c)
		l.punct(c)
		l.add(tokSymbol, c+1, sym)
	} else {
		l.add(tokSymbol, 0, sym)
	}
	l.add(tokOffset, sym, end)
	scanSuffix(s, end, l)
}

// scanSuffix lexes '%' and the text after it, when s[i] is '%'.
func scanSuffix(s string, i int, l *tokenList) {
	if i < len(s) {
		l.punct(i)
		l.add(tokSuffix, i+1, len(s))
	}
}

// scanFprobePlace lexes argv[1] of an fprobe or tracepoint probe: the
// symbol up to the first '%', and the suffix.
func scanFprobePlace(s string, l *tokenList) {
	end := indexByteFrom(s, '%', 0)
	if end < 0 {
		end = len(s)
	}
	l.add(tokSymbol, 0, end)
	scanSuffix(s, end, l)
}

// scanUprobePlace lexes PATH:OFFSET[%return][(REF_CTR_OFFSET)] like
// trace_uprobe's create function: the last ':' ends the path, the first
// '(' after it starts the reference counter offset (up to the first ')'
// after it, and the text after that ')' is trailing junk), and in the
// offset text before the '(' the first '%' starts the suffix.
func scanUprobePlace(s string, l *tokenList) {
	// The path token is there even when empty: it marks the place as a
	// uprobe's.
	c := -1
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == ':' {
			c = i
			break
		}
	}
	if c < 0 {
		l.always(tokPath, 0, len(s))
		return
	}
	l.always(tokPath, 0, c)
	l.punct(c)
	open := indexByteFrom(s, '(', c+1)
	end := open
	if end < 0 {
		end = len(s)
	}
	pct := indexByteFrom(s[:end], '%', c+1)
	if pct < 0 {
		l.add(tokOffset, c+1, end)
	} else {
		l.add(tokOffset, c+1, pct)
		l.punct(pct)
		l.add(tokSuffix, pct+1, end)
	}
	if open >= 0 {
		l.punct(open)
		cl := indexByteFrom(s, ')', open+1)
		if cl < 0 {
			l.add(tokText, open+1, len(s))
		} else {
			l.add(tokText, open+1, cl)
			l.punct(cl)
			l.add(tokText, cl+1, len(s))
		}
	}
}

// scanEprobePlace lexes an event probe's SYSTEM.EVENT or SYSTEM/EVENT.
func scanEprobePlace(s string, l *tokenList) { scanEventName(s, 0, l) }

func indexByteFrom(s string, c byte, from int) int {
	for i := from; i < len(s); i++ {
		if s[i] == c {
			return i
		}
	}
	return -1
}

// scanArgument lexes a fetch argument in traceprobe_parse_probe_arg's
// order: the first '=' ends the name, the first ':' after it starts the
// type, and the fetch part between is lexed by its first byte.
func scanArgument(s string, l *tokenList) {
	b := 0
	if eq := indexByteFrom(s, '=', 0); eq >= 0 {
		l.add(tokName, 0, eq)
		l.punct(eq)
		b = eq + 1
	}
	end := indexByteFrom(s, ':', b)
	if end < 0 {
		end = len(s)
	}
	scanFetch(s, b, end, l)
	if end < len(s) {
		l.punct(end)
		scanType(s, end+1, l)
	}
}

// scanFetch lexes the fetch part s[i:end] by its first byte, as
// parse_probe_arg switches on it.
func scanFetch(s string, i, end int, l *tokenList) {
	if i >= end {
		return
	}
	switch c := s[i]; {
	case c == '$':
		l.punct(i)
		scanChain(s, i+1, end, l)
	case c == '%':
		l.punct(i)
		l.add(tokReg, i+1, end)
	case c == '@':
		l.punct(i)
		switch {
		case i+1 < end && isDigit(s[i+1]):
			l.add(tokAddr, i+1, end)
		case i+1 < end && s[i+1] == '+':
			l.punct(i + 1)
			l.add(tokText, i+2, end)
		default:
			// @SYM[+|-OFFS]: the first '+' or '-' starts the offset.
			j := i + 1
			for j < end && s[j] != '+' && s[j] != '-' {
				j++
			}
			l.add(tokSymbol, i+1, j)
			l.add(tokOffset, j, end)
		}
	case c == '+' || c == '-':
		scanDeref(s, i, end, l)
	case c == '\\':
		l.add(tokBackslash, i, i+1)
		if i+1 < end && s[i+1] == '"' {
			l.add(tokQuote, i+1, i+2)
			l.add(tokStr, i+2, end)
		} else {
			l.add(tokImm, i+1, end)
		}
	case isAlpha(c) || c == '_':
		scanChain(s, i, end, l)
	default:
		l.add(tokText, i, end)
	}
}

// scanDeref lexes +|-[u]OFFS(FETCHARG)TRAIL: the first '(' ends the
// offset, and the last ')' closes the inner argument (strrchr).
func scanDeref(s string, i, end int, l *tokenList) {
	l.punct(i)
	i++
	if i < end && s[i] == 'u' {
		l.add(tokUser, i, i+1)
		i++
	}
	open := indexByteFrom(s[:end], '(', i)
	if open < 0 {
		l.add(tokDerefOffs, i, end)
		return
	}
	l.add(tokDerefOffs, i, open)
	l.punct(open)
	cl := -1
	for j := end - 1; j > open; j-- {
		if s[j] == ')' {
			cl = j
			break
		}
	}
	if cl < 0 {
		// The kernel stops here (DEREF_OPEN_BRACE): the rest is not
		// an argument.
		l.always(tokUnclosed, open+1, end)
		return
	}
	scanFetch(s, open+1, cl, l)
	l.punct(cl)
	l.add(tokText, cl+1, end)
}

// scanChain lexes NAME(->FIELD|.FIELD)*: a name or member runs up to the
// next '.' or '-'; "->" is one separator, a '-' without '>' a stray one
// (split_next_field).
func scanChain(s string, i, end int, l *tokenList) {
	for first := true; ; first = false {
		j := i
		for j < end && s[j] != '.' && s[j] != '-' {
			j++
		}
		if first {
			// The name is there even when empty ("$", "$->x").
			l.always(tokField, i, j)
		} else {
			l.add(tokField, i, j)
		}
		if j >= end {
			return
		}
		if s[j] == '-' && j+1 < end && s[j+1] == '>' {
			l.add(tokPunct, j, j+2)
			i = j + 2
		} else {
			l.punct(j)
			i = j + 1
		}
	}
}

// scanType lexes TYPE[[N]] from s[i]: the first '[' starts the array
// count, up to the first ']'. A type name starting with 'b' is a bitfield
// b<WIDTH>@<OFFS>/<CONTAINER>: the container follows the first '/', the
// offset the first '@' before it.
func scanType(s string, i int, l *tokenList) {
	end := indexByteFrom(s, '[', i)
	if end < 0 {
		end = len(s)
	}
	if i < end && s[i] == 'b' {
		l.add(tokBits, i, i+1)
		slash := indexByteFrom(s[:end], '/', i)
		if slash < 0 {
			slash = end
		}
		if at := indexByteFrom(s[:slash], '@', i); at >= 0 {
			l.add(tokWidth, i+1, at)
			l.punct(at)
			l.add(tokBitoffs, at+1, slash)
		} else {
			l.add(tokWidth, i+1, slash)
		}
		if slash < end {
			l.punct(slash)
			l.add(tokContainer, slash+1, end)
		}
	} else {
		l.add(tokType, i, end)
	}
	if end == len(s) {
		return
	}
	l.punct(end)
	cl := indexByteFrom(s, ']', end+1)
	if cl < 0 {
		l.add(tokCount, end+1, len(s))
		return
	}
	l.add(tokCount, end+1, cl)
	l.punct(cl)
	l.add(tokText, cl+1, len(s))
}
