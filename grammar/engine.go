package grammar

import (
	"fmt"
	"reflect"
	"strings"
	"unsafe"

	"github.com/alecthomas/participle/v2/lexer"
)

// The engine that runs the grammar. The grammar is written in participle's
// struct-tag syntax and participle's own parser builds the same trees
// (TestEngineMatchesParticiple, FuzzParsers), but participle's reflective
// parser allocates several times per token and runs about 20k lines/s,
// which the create path (100k lines/s and more) cannot afford. This
// engine compiles the same tags once into a small tree of nodes and
// parses with participle's semantics: a sequence whose first element does
// not match does not match, one that stops later fails; an optional or
// repeated part that fails is backtracked; alternatives are tried in
// order; a struct matched by nothing stays nil. Captures are undone on
// backtracking, as participle applies them only once a branch is taken.

// Results of parsing a node, as participle's nodes report them: no match
// (nil), a match (maybe empty), or a failure (an error).
const (
	noMatch = iota
	match
	fail
)

type nodeKind uint8

const (
	nRef     nodeKind = iota // a token type
	nLit                     // a token text
	nCapture                 // @: one token (of some types or texts) into a field
	nStruct                  // @@: a struct into a pointer or slice field
	nSeq
	nAlt
	nOpt  // ?
	nStar // *
	nPlus // +
)

// captureKind is the type of the field a capture stores into.
type captureKind uint8

const (
	capToken captureKind = iota
	capBool
	capString
)

type gnode struct {
	kind     nodeKind
	items    []*gnode
	typ      lexer.TokenType   // nRef
	lit      string            // nLit
	types    []lexer.TokenType // nCapture: token types it takes
	lits     []string          // nCapture: token texts it takes
	litTypes []lexer.TokenType // nCapture: the lits' token types (EOF: any)
	off      uintptr           // nCapture, nStruct: field offset
	capKind  captureKind       // nCapture
	slice    bool              // nStruct: append to a slice field
	strct    *structRule       // nStruct
	// First set, for skipping a struct that cannot start here without
	// allocating it.
	firstTypes map[lexer.TokenType]bool
	firstLits  map[string]bool
	nullable   bool
	firstMask  uint64   // firstTypes as a bit set (bit -type)
	firstList  []string // firstLits as a list
}

// structRule is one grammar struct: its type, expression and position
// fields.
type structRule struct {
	typ               reflect.Type
	expr              *gnode
	pos               int // index of Pos, or -1
	endPos            int // index of EndPos, or -1
	posOff, endPosOff uintptr
}

var (
	tokenType    = reflect.TypeOf(lexer.Token{})
	positionType = reflect.TypeOf(lexer.Position{})
)

// compiler turns struct tags into rules; rules are shared by type (the
// grammar is recursive: FetchArg, Deref, FetchArg).
type compiler struct {
	rules map[reflect.Type]*structRule
}

// mustRule compiles the grammar of struct type t (and of the structs it
// refers to); a grammar error is a bug, found when the package loads.
func mustRule(t reflect.Type) *structRule {
	c := &compiler{rules: map[reflect.Type]*structRule{}}
	r, err := c.rule(t)
	if err != nil {
		panic(fmt.Sprintf("grammar: %v", err))
	}
	c.first()
	return r
}

func (c *compiler) rule(t reflect.Type) (*structRule, error) {
	if r := c.rules[t]; r != nil {
		return r, nil
	}
	r := &structRule{typ: t, pos: -1, endPos: -1}
	c.rules[t] = r
	if f, ok := t.FieldByName("Pos"); ok && f.Type == positionType {
		r.pos, r.posOff = f.Index[0], f.Offset
	}
	if f, ok := t.FieldByName("EndPos"); ok && f.Type == positionType {
		r.endPos, r.endPosOff = f.Index[0], f.Offset
	}
	toks, err := tagTokens(t)
	if err != nil {
		return nil, err
	}
	p := &tagParser{toks: toks, typ: t, c: c}
	e, err := p.alt()
	if err != nil {
		return nil, err
	}
	if p.i != len(toks) {
		return nil, fmt.Errorf("%s: unexpected %q in the grammar", t.Name(), p.peek())
	}
	r.expr = e
	return r, nil
}

// first computes the first sets of every node, to a fixed point (the
// rules are recursive).
func (c *compiler) first() {
	for changed := true; changed; {
		changed = false
		for _, r := range c.rules {
			if firstOf(r.expr) {
				changed = true
			}
		}
	}
	for _, r := range c.rules {
		walk(r.expr, func(n *gnode) {
			for t := range n.firstTypes {
				n.firstMask |= 1 << uint(-t)
			}
			for s := range n.firstLits {
				n.firstList = append(n.firstList, s)
			}
		})
	}
}

func walk(n *gnode, fn func(*gnode)) {
	fn(n)
	for _, it := range n.items {
		walk(it, fn)
	}
}

// firstOf updates n's first set from its items and reports a change.
func firstOf(n *gnode) bool {
	if n.firstTypes == nil {
		n.firstTypes, n.firstLits = map[lexer.TokenType]bool{}, map[string]bool{}
	}
	changed := false
	addType := func(t lexer.TokenType) {
		if !n.firstTypes[t] {
			n.firstTypes[t] = true
			changed = true
		}
	}
	addLit := func(s string) {
		if !n.firstLits[s] {
			n.firstLits[s] = true
			changed = true
		}
	}
	from := func(m *gnode) {
		for t := range m.firstTypes {
			addType(t)
		}
		for s := range m.firstLits {
			addLit(s)
		}
	}
	nullable := false
	switch n.kind {
	case nRef:
		addType(n.typ)
	case nLit:
		addLit(n.lit)
	case nCapture:
		for _, t := range n.types {
			addType(t)
		}
		for _, s := range n.lits {
			addLit(s)
		}
	case nStruct:
		// The struct's own rule is updated by the fixed-point loop
		// (rules are recursive).
		from(n.strct.expr)
		nullable = n.strct.expr.nullable
	case nSeq:
		nullable = true
		for _, it := range n.items {
			if firstOf(it) {
				changed = true
			}
			if nullable {
				from(it)
				nullable = it.nullable
			}
		}
	case nAlt:
		for _, it := range n.items {
			if firstOf(it) {
				changed = true
			}
			from(it)
			nullable = nullable || it.nullable
		}
	case nOpt, nStar, nPlus:
		if firstOf(n.items[0]) {
			changed = true
		}
		from(n.items[0])
		nullable = n.kind != nPlus || n.items[0].nullable
	}
	if nullable && !n.nullable {
		n.nullable = true
		changed = true
	}
	return changed
}

// canStart reports whether t can be the first token of n.
func (n *gnode) canStart(t *lexer.Token) bool {
	if n.nullable || n.firstMask&(1<<uint(-t.Type)) != 0 {
		return true
	}
	if t.Type != lexer.EOF {
		for _, s := range n.firstList {
			if s == t.Value {
				return true
			}
		}
	}
	return false
}

type tagToken struct {
	s     string
	field int
}

// tagTokens splits the concatenated tags of t's fields into tokens, each
// remembering the field it came from (captures go to that field).
func tagTokens(t reflect.Type) ([]tagToken, error) {
	var out []tagToken
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag, ok := f.Tag.Lookup("parser")
		if !ok {
			continue
		}
		for j := 0; j < len(tag); {
			c := tag[j]
			switch {
			case c == ' ':
				j++
			case c == '@' && j+1 < len(tag) && tag[j+1] == '@':
				out = append(out, tagToken{"@@", i})
				j += 2
			case strings.IndexByte("@()|?*+", c) >= 0:
				out = append(out, tagToken{string(c), i})
				j++
			case c == '\'':
				// 'text' or 'text':Type
				k := strings.IndexByte(tag[j+1:], '\'')
				if k < 0 {
					return nil, fmt.Errorf("%s.%s: unterminated literal", t.Name(), f.Name)
				}
				end := j + k + 2
				if end < len(tag) && tag[end] == ':' {
					end++
					for end < len(tag) && (isAlnum(tag[end]) || tag[end] == '_') {
						end++
					}
				}
				out = append(out, tagToken{tag[j:end], i})
				j = end
			default:
				k := j
				for k < len(tag) && (isAlnum(tag[k]) || tag[k] == '_') {
					k++
				}
				if k == j {
					return nil, fmt.Errorf("%s.%s: unexpected %q in the grammar", t.Name(), f.Name, c)
				}
				out = append(out, tagToken{tag[j:k], i})
				j = k
			}
		}
	}
	return out, nil
}

// tagParser parses participle's tag syntax (the part the grammar uses:
// sequences, alternatives, groups, ?, *, +, token types, 'literals', @
// and @@).
type tagParser struct {
	toks []tagToken
	i    int
	typ  reflect.Type
	c    *compiler
}

func (p *tagParser) peek() string {
	if p.i < len(p.toks) {
		return p.toks[p.i].s
	}
	return ""
}

func (p *tagParser) alt() (*gnode, error) {
	var items []*gnode
	for {
		s, err := p.seq()
		if err != nil {
			return nil, err
		}
		items = append(items, s)
		if p.peek() != "|" {
			break
		}
		p.i++
	}
	if len(items) == 1 {
		return items[0], nil
	}
	return &gnode{kind: nAlt, items: items}, nil
}

func (p *tagParser) seq() (*gnode, error) {
	var items []*gnode
	for {
		switch p.peek() {
		case "", "|", ")":
			if len(items) == 0 {
				return nil, fmt.Errorf("%s: empty sequence", p.typ.Name())
			}
			if len(items) == 1 {
				return items[0], nil
			}
			return &gnode{kind: nSeq, items: items}, nil
		}
		t, err := p.term()
		if err != nil {
			return nil, err
		}
		items = append(items, t)
	}
}

func (p *tagParser) term() (*gnode, error) {
	tok := p.toks[p.i]
	var n *gnode
	var err error
	switch tok.s {
	case "@@":
		p.i++
		n, err = p.strct(tok.field)
	case "@":
		p.i++
		n, err = p.capture(tok.field)
	default:
		n, err = p.atom()
	}
	if err != nil {
		return nil, err
	}
	switch p.peek() {
	case "?":
		n = &gnode{kind: nOpt, items: []*gnode{n}}
	case "*":
		n = &gnode{kind: nStar, items: []*gnode{n}}
	case "+":
		n = &gnode{kind: nPlus, items: []*gnode{n}}
	default:
		return n, nil
	}
	p.i++
	return n, nil
}

func (p *tagParser) strct(field int) (*gnode, error) {
	ft := p.typ.Field(field).Type
	slice := false
	switch {
	case ft.Kind() == reflect.Pointer && ft.Elem().Kind() == reflect.Struct:
	case ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Pointer && ft.Elem().Elem().Kind() == reflect.Struct:
		slice = true
		ft = ft.Elem()
	default:
		return nil, fmt.Errorf("%s.%s: @@ needs a pointer to a struct or a slice of them", p.typ.Name(), p.typ.Field(field).Name)
	}
	r, err := p.c.rule(ft.Elem())
	if err != nil {
		return nil, err
	}
	return &gnode{kind: nStruct, off: p.typ.Field(field).Offset, slice: slice, strct: r}, nil
}

// capture parses what follows '@': tokens of some types or texts.
func (p *tagParser) capture(field int) (*gnode, error) {
	a, err := p.atom()
	if err != nil {
		return nil, err
	}
	n := &gnode{kind: nCapture, off: p.typ.Field(field).Offset}
	var collect func(x *gnode) bool
	collect = func(x *gnode) bool {
		switch x.kind {
		case nRef:
			n.types = append(n.types, x.typ)
		case nLit:
			n.lits = append(n.lits, x.lit)
			n.litTypes = append(n.litTypes, x.typ)
		case nAlt:
			for _, it := range x.items {
				if !collect(it) {
					return false
				}
			}
		default:
			return false
		}
		return true
	}
	f := p.typ.Field(field)
	if !collect(a) {
		return nil, fmt.Errorf("%s.%s: only single tokens are captured", p.typ.Name(), f.Name)
	}
	switch {
	case f.Type == tokenType:
		n.capKind = capToken
	case f.Type.Kind() == reflect.Bool:
		n.capKind = capBool
	case f.Type.Kind() == reflect.String:
		n.capKind = capString
	default:
		return nil, fmt.Errorf("%s.%s: cannot capture into %s", p.typ.Name(), f.Name, f.Type)
	}
	return n, nil
}

func (p *tagParser) atom() (*gnode, error) {
	if p.i >= len(p.toks) {
		return nil, fmt.Errorf("%s: unexpected end of the grammar", p.typ.Name())
	}
	tok := p.toks[p.i]
	p.i++
	switch {
	case tok.s == "(":
		e, err := p.alt()
		if err != nil {
			return nil, err
		}
		if p.peek() != ")" {
			return nil, fmt.Errorf("%s: missing ')'", p.typ.Name())
		}
		p.i++
		return e, nil
	case tok.s[0] == '\'':
		q := strings.LastIndexByte(tok.s, '\'')
		n := &gnode{kind: nLit, lit: tok.s[1:q], typ: lexer.EOF}
		if q+1 < len(tok.s) {
			t, ok := tokenNames[tok.s[q+2:]]
			if !ok {
				return nil, fmt.Errorf("%s: unknown token type in %s", p.typ.Name(), tok.s)
			}
			n.typ = t
		}
		return n, nil
	case isAlpha(tok.s[0]):
		t, ok := tokenNames[tok.s]
		if !ok {
			return nil, fmt.Errorf("%s: unknown token type %s", p.typ.Name(), tok.s)
		}
		return &gnode{kind: nRef, typ: t}, nil
	}
	return nil, fmt.Errorf("%s: unexpected %q in the grammar", p.typ.Name(), tok.s)
}

// engine is the state of one parse: the construct's tokens (ending with
// EOF), the cursor, and the captures to undo when backtracking.
//
// Fields are set through their offsets (unsafe.Pointer arithmetic on the
// struct a rule was compiled from), which keeps a capture to one store:
// reflect.Value's field access costs several times the rest of the parse.
type engine struct {
	toks []lexer.Token
	i    int
	undo []undo
	lex  tokenList // the lexer's state (here, not on the stack: scanners are called indirectly)
}

// undo restores one field at p: a Token, bool or pointer to its zero
// value, a string to its earlier text, a slice to its earlier length.
type undo struct {
	p    unsafe.Pointer
	kind undoKind
	s    string
	len  int
}

type undoKind uint8

const (
	undoToken undoKind = iota
	undoBool
	undoString
	undoPointer
	undoSlice
)

func (e *engine) mark() (int, int) { return e.i, len(e.undo) }

// release clears the engine (no token text or field stays reachable
// from the pool) and puts it back.
func (e *engine) release() {
	clear(e.toks)
	clear(e.undo)
	e.toks, e.undo, e.i = e.toks[:0], e.undo[:0], 0
	e.lex = tokenList{}
	engines.Put(e)
}

func (e *engine) reset(i, u int) {
	for k := len(e.undo) - 1; k >= u; k-- {
		d := &e.undo[k]
		switch d.kind {
		case undoToken:
			*(*lexer.Token)(d.p) = lexer.Token{}
		case undoBool:
			*(*bool)(d.p) = false
		case undoString:
			*(*string)(d.p) = d.s
		case undoPointer:
			*(*unsafe.Pointer)(d.p) = nil
		case undoSlice:
			sl := (*[]unsafe.Pointer)(d.p)
			clear((*sl)[d.len:])
			*sl = (*sl)[:d.len]
		}
	}
	clear(e.undo[u:])
	e.i, e.undo = i, e.undo[:u]
}

// parseStruct parses r's expression into the struct at p, of r's type.
func (e *engine) parseStruct(r *structRule, p unsafe.Pointer) int {
	if r.pos >= 0 {
		*(*lexer.Position)(unsafe.Add(p, r.posOff)) = e.toks[e.i].Pos
	}
	res := e.node(r.expr, p)
	if r.endPos >= 0 {
		*(*lexer.Position)(unsafe.Add(p, r.endPosOff)) = e.toks[e.i].Pos
	}
	return res
}

func (e *engine) node(n *gnode, p unsafe.Pointer) int {
	t := &e.toks[e.i]
	switch n.kind {
	case nRef:
		if t.Type == n.typ {
			e.i++
			return match
		}
		return noMatch
	case nLit:
		if t.Type != lexer.EOF && t.Value == n.lit && (n.typ == lexer.EOF || t.Type == n.typ) {
			e.i++
			return match
		}
		return noMatch
	case nCapture:
		if t.Type == lexer.EOF || !n.takes(t) {
			return noMatch
		}
		e.i++
		f := unsafe.Add(p, n.off)
		switch n.capKind {
		case capToken:
			e.undo = append(e.undo, undo{p: f, kind: undoToken})
			*(*lexer.Token)(f) = *t
		case capBool:
			e.undo = append(e.undo, undo{p: f, kind: undoBool})
			*(*bool)(f) = true
		case capString:
			sp := (*string)(f)
			e.undo = append(e.undo, undo{p: f, kind: undoString, s: *sp})
			*sp += t.Value
		}
		return match
	case nStruct:
		if !n.canStart(t) {
			return noMatch
		}
		c := reflect.New(n.strct.typ).UnsafePointer()
		res := e.parseStruct(n.strct, c)
		if res != noMatch {
			f := unsafe.Add(p, n.off)
			if n.slice {
				// A []*T has the layout of a []unsafe.Pointer.
				sl := (*[]unsafe.Pointer)(f)
				e.undo = append(e.undo, undo{p: f, kind: undoSlice, len: len(*sl)})
				*sl = append(*sl, c)
			} else {
				e.undo = append(e.undo, undo{p: f, kind: undoPointer})
				*(*unsafe.Pointer)(f) = c
			}
		}
		return res
	case nSeq:
		for k, it := range n.items {
			if res := e.node(it, p); res != match {
				if k == 0 {
					return res
				}
				return fail
			}
		}
		return match
	case nAlt:
		failed := false
		for _, it := range n.items {
			i, u := e.mark()
			switch e.node(it, p) {
			case match:
				return match
			case fail:
				failed = true
			}
			e.reset(i, u)
		}
		if failed {
			return fail
		}
		return noMatch
	case nOpt:
		i, u := e.mark()
		if e.node(n.items[0], p) != match {
			e.reset(i, u)
		}
		return match
	case nStar, nPlus:
		k := 0
		for {
			i, u := e.mark()
			if e.node(n.items[0], p) != match || e.i == i {
				e.reset(i, u)
				break
			}
			k++
		}
		if n.kind == nPlus && k == 0 {
			return noMatch
		}
		return match
	}
	return fail
}

// takes reports whether a capture takes token t.
func (n *gnode) takes(t *lexer.Token) bool {
	for _, typ := range n.types {
		if t.Type == typ {
			return true
		}
	}
	for k, s := range n.lits {
		if t.Value == s && (n.litTypes[k] == lexer.EOF || t.Type == n.litTypes[k]) {
			return true
		}
	}
	return false
}
