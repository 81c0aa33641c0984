package printfmt

import (
	"fmt"
	"strconv"
	"strings"
)

// Expr is a parsed print fmt argument.
type Expr interface{ isExpr() }

type (
	numLit struct{ v uint64 }
	strLit struct{ s string }
	ident  struct{ name string }  // a name the format uses that is not a field (an enum constant, a symbol)
	recRef struct{ field string } // REC->field
	index  struct{ x, i Expr }
	unop   struct {
		op string
		x  Expr
	}
	binop struct {
		op   string
		x, y Expr
	}
	cond struct{ c, a, b Expr }
	cast struct {
		typ string
		x   Expr
	}
	call struct {
		fn   string
		args []Expr
	}
	// pair is a { value, "name" } entry of __print_flags and
	// __print_symbolic.
	pair struct {
		v    Expr
		name string
	}
)

func (numLit) isExpr() {}
func (strLit) isExpr() {}
func (ident) isExpr()  {}
func (recRef) isExpr() {}
func (index) isExpr()  {}
func (unop) isExpr()   {}
func (binop) isExpr()  {}
func (cond) isExpr()   {}
func (cast) isExpr()   {}
func (call) isExpr()   {}
func (pair) isExpr()   {}

// token kinds
const (
	tEOF = iota
	tNum
	tStr
	tIdent
	tPunct
)

type token struct {
	kind int
	s    string
	v    uint64
}

// lex splits a print fmt line into tokens.
func lex(s string) ([]token, error) {
	var out []token
	i := 0
	for i < len(s) {
		c := s[i]
		switch {
		case c == ' ' || c == '\t':
			i++
		case c == '"':
			j := i + 1
			var b strings.Builder
			for j < len(s) && s[j] != '"' {
				if s[j] == '\\' && j+1 < len(s) {
					j++
					switch s[j] {
					case 'n':
						b.WriteByte('\n')
					case 't':
						b.WriteByte('\t')
					case '\\', '"', '\'':
						b.WriteByte(s[j])
					default:
						b.WriteByte('\\')
						b.WriteByte(s[j])
					}
					j++
					continue
				}
				b.WriteByte(s[j])
				j++
			}
			if j >= len(s) {
				return nil, fmt.Errorf("unterminated string at %d", i)
			}
			out = append(out, token{kind: tStr, s: b.String()})
			i = j + 1
		case c == '\'':
			// A character constant: 'c' or '\\c'.
			j := i + 1
			if j < len(s) && s[j] == '\\' {
				j++
			}
			if j+1 >= len(s) || s[j+1] != '\'' {
				return nil, fmt.Errorf("character constant at %d", i)
			}
			v := uint64(s[j])
			if s[j-1] == '\\' {
				switch s[j] {
				case 'n':
					v = '\n'
				case 't':
					v = '\t'
				case '0':
					v = 0
				}
			}
			out = append(out, token{kind: tNum, v: v, s: s[i : j+2]})
			i = j + 2
		case c >= '0' && c <= '9':
			j := i
			for j < len(s) && (isAlnum(s[j])) {
				j++
			}
			lit := strings.TrimRight(s[i:j], "uUlL")
			v, err := strconv.ParseUint(lit, 0, 64)
			if err != nil {
				// An octal-looking or odd literal: C reads "0" prefixes as
				// octal, as ParseUint with base 0 does; anything else is
				// not a number ktrace knows.
				return nil, fmt.Errorf("number %q at %d", s[i:j], i)
			}
			out = append(out, token{kind: tNum, v: v, s: s[i:j]})
			i = j
		case isAlpha(c):
			j := i
			for j < len(s) && isAlnum(s[j]) {
				j++
			}
			out = append(out, token{kind: tIdent, s: s[i:j]})
			i = j
		default:
			p := ""
			for _, op := range []string{"->", "<<", ">>", "<=", ">=", "==", "!=", "&&", "||"} {
				if strings.HasPrefix(s[i:], op) {
					p = op
					break
				}
			}
			if p == "" {
				if !strings.ContainsRune("()[]{},?:+-*/%&|^~!<>.", rune(c)) {
					return nil, fmt.Errorf("character %q at %d", c, i)
				}
				p = string(c)
			}
			out = append(out, token{kind: tPunct, s: p})
			i += len(p)
		}
	}
	return append(out, token{kind: tEOF}), nil
}

func isAlpha(c byte) bool { return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func isAlnum(c byte) bool { return isAlpha(c) || c >= '0' && c <= '9' }

type parser struct {
	toks []token
	pos  int
}

func (p *parser) peek() token { return p.toks[p.pos] }
func (p *parser) next() token { t := p.toks[p.pos]; p.pos++; return t }
func (p *parser) isP(s string) bool {
	t := p.peek()
	return t.kind == tPunct && t.s == s
}
func (p *parser) expect(s string) error {
	if !p.isP(s) {
		return fmt.Errorf("want %q, have %q", s, p.peek().s)
	}
	p.pos++
	return nil
}

// parsePrintFmt parses `"FORMAT", ARG, ARG...`.
func parsePrintFmt(s string) (string, []Expr, error) {
	toks, err := lex(s)
	if err != nil {
		return "", nil, err
	}
	p := &parser{toks: toks}
	t := p.next()
	if t.kind != tStr {
		return "", nil, fmt.Errorf("print fmt does not start with a string")
	}
	format := t.s
	// Adjacent string literals concatenate.
	for p.peek().kind == tStr {
		format += p.next().s
	}
	var args []Expr
	for p.isP(",") {
		p.next()
		e, err := p.expr()
		if err != nil {
			return format, nil, err
		}
		args = append(args, e)
	}
	if p.peek().kind != tEOF {
		return format, nil, fmt.Errorf("unexpected %q after the arguments", p.peek().s)
	}
	return format, args, nil
}

func (p *parser) expr() (Expr, error) {
	c, err := p.binary(0)
	if err != nil {
		return nil, err
	}
	if !p.isP("?") {
		return c, nil
	}
	p.next()
	a, err := p.expr()
	if err != nil {
		return nil, err
	}
	if err := p.expect(":"); err != nil {
		return nil, err
	}
	b, err := p.expr()
	if err != nil {
		return nil, err
	}
	return cond{c, a, b}, nil
}

// binary operator precedence, loosest first.
var precedence = [][]string{
	{"||"}, {"&&"}, {"|"}, {"^"}, {"&"}, {"==", "!="}, {"<", ">", "<=", ">="}, {"<<", ">>"}, {"+", "-"}, {"*", "/", "%"},
}

func (p *parser) binary(level int) (Expr, error) {
	if level == len(precedence) {
		return p.unary()
	}
	x, err := p.binary(level + 1)
	if err != nil {
		return nil, err
	}
	for {
		t := p.peek()
		found := ""
		if t.kind == tPunct {
			for _, op := range precedence[level] {
				if t.s == op {
					found = op
				}
			}
		}
		if found == "" {
			return x, nil
		}
		p.next()
		y, err := p.binary(level + 1)
		if err != nil {
			return nil, err
		}
		x = binop{found, x, y}
	}
}

// typeWords are the words that make a parenthesised list a cast.
var typeWords = map[string]bool{
	"unsigned": true, "signed": true, "int": true, "long": true, "short": true, "char": true,
	"void": true, "bool": true, "_Bool": true, "struct": true, "union": true, "enum": true, "const": true,
	"u8": true, "u16": true, "u32": true, "u64": true, "s8": true, "s16": true, "s32": true, "s64": true,
	"__u8": true, "__u16": true, "__u32": true, "__u64": true, "__s8": true, "__s16": true, "__s32": true, "__s64": true,
	"__le16": true, "__le32": true, "__le64": true, "__be16": true, "__be32": true, "__be64": true,
}

func isTypeWord(s string) bool {
	return typeWords[s] || strings.HasSuffix(s, "_t")
}

// castAhead reports whether the tokens after an opening parenthesis are a
// type name closed by ')'.
func (p *parser) castAhead() bool {
	i := p.pos
	words := 0
	for ; i < len(p.toks); i++ {
		t := p.toks[i]
		switch {
		case t.kind == tIdent && (isTypeWord(t.s) || (i > p.pos && (p.toks[i-1].s == "struct" || p.toks[i-1].s == "union" || p.toks[i-1].s == "enum"))):
			words++
		case t.kind == tPunct && t.s == "*":
		case t.kind == tPunct && t.s == ")":
			return words > 0
		default:
			return false
		}
	}
	return false
}

func (p *parser) unary() (Expr, error) {
	t := p.peek()
	if t.kind == tPunct {
		switch t.s {
		case "-", "~", "!", "+":
			p.next()
			x, err := p.unary()
			if err != nil {
				return nil, err
			}
			return unop{t.s, x}, nil
		case "(":
			p.next()
			if p.castAhead() {
				var words []string
				for !p.isP(")") {
					words = append(words, p.next().s)
				}
				p.next()
				x, err := p.unary()
				if err != nil {
					return nil, err
				}
				return cast{strings.Join(words, " "), x}, nil
			}
			p.pos--
		}
	}
	return p.postfix()
}

func (p *parser) postfix() (Expr, error) {
	x, err := p.primary()
	if err != nil {
		return nil, err
	}
	for {
		switch {
		case p.isP("["):
			p.next()
			i, err := p.expr()
			if err != nil {
				return nil, err
			}
			if err := p.expect("]"); err != nil {
				return nil, err
			}
			x = index{x, i}
		case p.isP("->"), p.isP("."):
			op := p.next().s
			name := p.next()
			if name.kind != tIdent {
				return nil, fmt.Errorf("want a member name after %s", op)
			}
			if id, ok := x.(ident); ok && id.name == "REC" && op == "->" {
				x = recRef{name.s}
				continue
			}
			return nil, fmt.Errorf("member access %s%s on something other than REC", op, name.s)
		default:
			return x, nil
		}
	}
}

func (p *parser) primary() (Expr, error) {
	t := p.next()
	switch t.kind {
	case tNum:
		return numLit{t.v}, nil
	case tStr:
		s := t.s
		for p.peek().kind == tStr {
			s += p.next().s
		}
		return strLit{s}, nil
	case tIdent:
		if p.isP("(") {
			p.next()
			var args []Expr
			for !p.isP(")") {
				var a Expr
				var err error
				if p.isP("{") {
					a, err = p.pair()
				} else {
					a, err = p.expr()
				}
				if err != nil {
					return nil, err
				}
				args = append(args, a)
				if p.isP(",") {
					p.next()
					continue
				}
				if !p.isP(")") {
					return nil, fmt.Errorf("in %s(): want , or ), have %q", t.s, p.peek().s)
				}
			}
			p.next()
			return call{t.s, args}, nil
		}
		return ident{t.s}, nil
	case tPunct:
		if t.s == "(" {
			x, err := p.expr()
			if err != nil {
				return nil, err
			}
			if err := p.expect(")"); err != nil {
				return nil, err
			}
			return x, nil
		}
	}
	return nil, fmt.Errorf("unexpected %q", t.s)
}

// pair parses "{ VALUE, "NAME" }".
func (p *parser) pair() (Expr, error) {
	if err := p.expect("{"); err != nil {
		return nil, err
	}
	v, err := p.expr()
	if err != nil {
		return nil, err
	}
	if err := p.expect(","); err != nil {
		return nil, err
	}
	n := p.next()
	if n.kind != tStr {
		return nil, fmt.Errorf("want a name string in { }, have %q", n.s)
	}
	if err := p.expect("}"); err != nil {
		return nil, err
	}
	return pair{v, n.s}, nil
}
