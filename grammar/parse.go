package grammar

import (
	"fmt"

	"github.com/alecthomas/participle/v2/lexer"
)

//go:generate go test -run TestGeneratedParser -update

// The parsers of the constructs are generated from the grammar's struct
// tags (parser_gen.go, by gen_test.go): participle's reflective parser
// gives the same trees (TestGeneratedMatchesParticiple) but costs several
// allocations per token, which the create path cannot afford.

// Results of a generated parse function, as participle's nodes report
// them: no match (nil), a match (maybe empty), or a failure (an error).
const (
	genNoMatch = iota
	genMatch
	genFail
)

const lexerEOF = lexer.EOF

// genParser is the state of a generated parser: the construct's tokens
// (ending with EOF) and the cursor.
type genParser struct {
	toks []lexer.Token
	i    int
}

// ref matches one token of type t.
func (p *genParser) ref(t lexer.TokenType) int {
	if p.toks[p.i].Type == t {
		p.i++
		return genMatch
	}
	return genNoMatch
}

// lit matches one token with text s.
func (p *genParser) lit(s string) int {
	if t := p.toks[p.i]; t.Type != lexer.EOF && t.Value == s {
		p.i++
		return genMatch
	}
	return genNoMatch
}

// lex runs a construct's scanner on s and ends the tokens with EOF.
func lex(scan scanner, s string) []lexer.Token {
	l := tokenList{s: s, toks: make([]lexer.Token, 0, 5)}
	scan(s, &l)
	return append(l.toks, lexer.Token{Type: lexer.EOF, Pos: lexer.Position{Offset: len(s), Line: 1, Column: len(s) + 1}})
}

// parseWith lexes s and parses it as one construct. The grammars accept
// every token sequence their lexers produce, so an error is a bug in the
// grammar.
func parseWith[G any](what string, scan scanner, parse func(*genParser, *G) int, s string) (*G, error) {
	p := genParser{toks: lex(scan, s)}
	n := new(G)
	if parse(&p, n) != genMatch || p.toks[p.i].Type != lexer.EOF {
		return nil, fmt.Errorf("grammar: %s %q: unexpected %q at offset %d", what, s, p.toks[p.i].Value, p.toks[p.i].Pos.Offset)
	}
	return n, nil
}

// ParseHead parses argv[0] of a command.
func ParseHead(argv0 string) (*Head, error) {
	return parseWith("command head", scanHead, (*genParser).parseHead, argv0)
}

// ParseKprobePlace parses argv[1] of a p or r command.
func ParseKprobePlace(arg string) (*KprobePlace, error) {
	return parseWith("kprobe place", scanKprobePlace, (*genParser).parseKprobePlace, arg)
}

// ParseFprobePlace parses argv[1] of an f or t command.
func ParseFprobePlace(arg string) (*FprobePlace, error) {
	return parseWith("fprobe place", scanFprobePlace, (*genParser).parseFprobePlace, arg)
}

// ParseUprobePlace parses argv[1] of a uprobe command.
func ParseUprobePlace(arg string) (*UprobePlace, error) {
	return parseWith("uprobe place", scanUprobePlace, (*genParser).parseUprobePlace, arg)
}

// ParseEprobePlace parses argv[1] of an e command.
func ParseEprobePlace(arg string) (*EprobePlace, error) {
	return parseWith("event probe place", scanEprobePlace, (*genParser).parseEprobePlace, arg)
}

// ParseRemoval parses argv[0] of a removal command.
func ParseRemoval(argv0 string) (*Removal, error) {
	return parseWith("removal", scanRemoval, (*genParser).parseRemoval, argv0)
}

// ParseArgument parses one fetch argument.
func ParseArgument(arg string) (*Argument, error) {
	return parseWith("fetch argument", scanArgument, (*genParser).parseArgument, arg)
}

// ParseType parses a fetch type (the text after an argument's ':').
func ParseType(typ string) (*Type, error) {
	return parseWith("fetch type", func(s string, l *tokenList) { scanType(s, 0, l) }, (*genParser).parseType, typ)
}
