package grammar

import (
	"fmt"
	"reflect"
	"sync"
	"unsafe"

	"github.com/alecthomas/participle/v2/lexer"
)

// The constructs are parsed by the engine (engine.go) running the
// grammar's rules, compiled once from the structs' tags.

// engines are reused between parses: a parse keeps nothing of the
// engine (the tree holds copies of the tokens), so its token and undo
// buffers serve the next parse.
var engines = sync.Pool{New: func() any { return &engine{toks: make([]lexer.Token, 0, 16), undo: make([]undo, 0, 16)} }}

// parseWith lexes s and parses it as one construct with rule r (of type
// G). The grammars accept every token sequence their lexers produce, so an
// error is a bug in the grammar.
func parseWith[G any](what string, scan scanner, r *structRule, s string) (*G, error) {
	if r.typ != reflect.TypeFor[G]() {
		return nil, fmt.Errorf("grammar: %s: rule for %s, not %s", what, r.typ, reflect.TypeFor[G]())
	}
	e := engines.Get().(*engine)
	defer e.release()
	e.lex = tokenList{s: s, toks: e.toks[:0]}
	scan(s, &e.lex)
	e.toks = append(e.lex.toks, lexer.Token{Type: lexer.EOF, Pos: lexer.Position{Offset: len(s), Line: 1, Column: len(s) + 1}})
	n := new(G)
	if e.parseStruct(r, unsafe.Pointer(n)) != match || e.toks[e.i].Type != lexer.EOF {
		return nil, fmt.Errorf("grammar: %s %q: unexpected %q at offset %d", what, s, e.toks[e.i].Value, e.toks[e.i].Pos.Offset)
	}
	return n, nil
}

// The rules of the constructs, compiled from the grammar's tags.
var (
	headRule        = mustRule(reflect.TypeOf(Head{}))
	kprobePlaceRule = mustRule(reflect.TypeOf(KprobePlace{}))
	fprobePlaceRule = mustRule(reflect.TypeOf(FprobePlace{}))
	uprobePlaceRule = mustRule(reflect.TypeOf(UprobePlace{}))
	eprobePlaceRule = mustRule(reflect.TypeOf(EprobePlace{}))
	removalRule     = mustRule(reflect.TypeOf(Removal{}))
	argumentRule    = mustRule(reflect.TypeOf(Argument{}))
	typeRule        = mustRule(reflect.TypeOf(Type{}))
)

// ParseHead parses argv[0] of a command.
func ParseHead(argv0 string) (*Head, error) {
	return parseWith[Head]("command head", scanHead, headRule, argv0)
}

// ParseKprobePlace parses argv[1] of a p or r command.
func ParseKprobePlace(arg string) (*KprobePlace, error) {
	return parseWith[KprobePlace]("kprobe place", scanKprobePlace, kprobePlaceRule, arg)
}

// ParseFprobePlace parses argv[1] of an f or t command.
func ParseFprobePlace(arg string) (*FprobePlace, error) {
	return parseWith[FprobePlace]("fprobe place", scanFprobePlace, fprobePlaceRule, arg)
}

// ParseUprobePlace parses argv[1] of a uprobe command.
func ParseUprobePlace(arg string) (*UprobePlace, error) {
	return parseWith[UprobePlace]("uprobe place", scanUprobePlace, uprobePlaceRule, arg)
}

// ParseEprobePlace parses argv[1] of an e command.
func ParseEprobePlace(arg string) (*EprobePlace, error) {
	return parseWith[EprobePlace]("event probe place", scanEprobePlace, eprobePlaceRule, arg)
}

// ParseRemoval parses argv[0] of a removal command.
func ParseRemoval(argv0 string) (*Removal, error) {
	return parseWith[Removal]("removal", scanRemoval, removalRule, argv0)
}

// ParseArgument parses one fetch argument.
func ParseArgument(arg string) (*Argument, error) {
	return parseWith[Argument]("fetch argument", scanArgument, argumentRule, arg)
}

// ParseType parses a fetch type (the text after an argument's ':').
func ParseType(typ string) (*Type, error) {
	return parseWith[Type]("fetch type", func(s string, l *tokenList) { scanType(s, 0, l) }, typeRule, typ)
}
