package grammar

import (
	"fmt"

	"github.com/alecthomas/participle/v2"
	"github.com/alecthomas/participle/v2/lexer"
)

// The declarative view of a probe-definition line, built with participle.
//
// The kernel does not parse a line with a grammar: it splits argv on
// whitespace and then looks for the first ':', '/', '.', '%', '+' or '-' with
// strchr()/strpbrk() in a fixed order, so whether a line is accepted, which
// error wins and where the caret goes depend on that order, not on a
// grammar. The participle grammar below is therefore deliberately permissive:
// every line parses, into tokens (argv) made of parts (punctuation and text
// runs), each with its byte position. The kernel's checks are applied
// afterwards, in the kernel's order, by ParseHead, ParseKprobePlace,
// ParseFprobePlace and ParseEventName, which work on the same token text.
//
// The create path of the events package uses Split and those functions
// directly: measured on the conformance corpora (BenchmarkParseValidate vs
// BenchmarkParseLineAST, one core), the hand-written scanner runs about
// 880k lines/s and participle's reflective parser about 4k lines/s, far
// below the 200k lines/s the create path must sustain. ParseLineAST is what tools use to show a
// line's structure (ktrace check), and the tests cross-check it against the
// fast path on the conformance corpora.

// lineLexer splits a line into whitespace runs (C isspace, like argv_split),
// single punctuation characters the kernel's parsers look for, and text runs.
var lineLexer = lexer.MustSimple([]lexer.SimpleRule{
	{Name: "Space", Pattern: `[ \t\n\v\f\r]+`},
	{Name: "Punct", Pattern: `[:/.%+\-=@$\\()\[\]"]`},
	{Name: "Text", Pattern: `[^ \t\n\v\f\r:/.%+\-=@$\\()\[\]"]+`},
})

// LineAST is a whole line: its whitespace-separated tokens (argv).
type LineAST struct {
	Tokens []*TokenAST `parser:"Space? ( @@ Space? )*"`
}

// TokenAST is one argv entry: the parts it is made of, and where it starts
// in the line.
type TokenAST struct {
	Pos    lexer.Position
	EndPos lexer.Position
	Parts  []*PartAST `parser:"@@+"`
}

// PartAST is a punctuation character or a run of other non-space bytes.
type PartAST struct {
	Pos   lexer.Position
	Punct string `parser:"  @Punct"`
	Text  string `parser:"| @Text"`
}

// Value is the part's text.
func (p *PartAST) Value() string {
	if p.Punct != "" {
		return p.Punct
	}
	return p.Text
}

// Text is the token's text.
func (t *TokenAST) Text() string {
	n := 0
	for _, p := range t.Parts {
		n += len(p.Value())
	}
	b := make([]byte, 0, n)
	for _, p := range t.Parts {
		b = append(b, p.Value()...)
	}
	return string(b)
}

// Argv returns the tokens' texts: the same argv Split returns.
func (l *LineAST) Argv() []string {
	out := make([]string, len(l.Tokens))
	for i, t := range l.Tokens {
		out[i] = t.Text()
	}
	return out
}

var lineParser = participle.MustBuild[LineAST](
	participle.Lexer(lineLexer),
	participle.UseLookahead(2),
)

// ParseLineAST parses a line (comment already stripped) into its tokens and
// parts with byte positions. Every line without NUL bytes parses.
func ParseLineAST(line string) (*LineAST, error) {
	l, err := lineParser.ParseString("", line)
	if err != nil {
		return nil, fmt.Errorf("parse line %q: %w", line, err)
	}
	return l, nil
}

// HeadOf derives the Head of a parsed argv[0] token from its parts: the
// letter, the prefix up to the first ':' part, and the spec after it with
// its offset inside the token.
func HeadOf(t *TokenAST) Head {
	h := Head{}
	text := t.Text()
	if text == "" {
		return h
	}
	h.Letter = text[0]
	for _, p := range t.Parts {
		off := p.Pos.Offset - t.Pos.Offset
		if p.Punct == ":" && off >= 1 {
			h.Prefix = text[1:off]
			h.HasSpec = true
			h.Spec = text[off+1:]
			h.SpecOff = off + 1
			return h
		}
	}
	h.Prefix = text[1:]
	return h
}
