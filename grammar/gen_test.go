package grammar

import (
	"bytes"
	"flag"
	"fmt"
	"go/format"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/alecthomas/participle/v2/lexer"
)

// The generator of parser_gen.go: Go code that parses exactly as
// participle's runtime parser does for the grammar structs' tags, without
// reflection (participle's reflective parser costs about half a
// microsecond and several allocations per matched token, too slow for
// the create path). The grammar tags stay the only definition of the
// syntax: this test fails when parser_gen.go is not what the tags
// generate (regenerate with go generate ./grammar), and
// TestGeneratedMatchesParticiple checks the generated parsers against
// participle's on the corpora.

var update = flag.Bool("update", false, "rewrite parser_gen.go")

// grammarRoots are the structs with a generated parser; the structs they
// reference get one too.
var grammarRoots = []any{Head{}, KprobePlace{}, FprobePlace{}, UprobePlace{}, EprobePlace{}, Removal{}, Argument{}}

func TestGeneratedParser(t *testing.T) {
	src, err := generateParsers()
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile("parser_gen.go", src, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	have, err := os.ReadFile("parser_gen.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(have, src) {
		t.Fatal("parser_gen.go is not what the grammar generates: run go generate ./grammar")
	}
}

// An expression of participle's struct-tag grammar (the subset the
// grammar uses).
type gexpr struct {
	kind  string // "seq", "alt", "ref", "lit", "strct", "group"
	items []*gexpr
	name  string // ref: token type; lit: literal
	mode  byte   // group: 0, '?', '*', '+'
	field *reflect.StructField
	typ   reflect.Type // strct: the struct type
}

type tagToken struct {
	s     string
	field *reflect.StructField
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
		fp := &f
		for j := 0; j < len(tag); {
			c := tag[j]
			switch {
			case c == ' ':
				j++
			case c == '@' && j+1 < len(tag) && tag[j+1] == '@':
				out = append(out, tagToken{"@@", fp})
				j += 2
			case strings.IndexByte("@()|?*+", c) >= 0:
				out = append(out, tagToken{string(c), fp})
				j++
			case c == '\'':
				k := strings.IndexByte(tag[j+1:], '\'')
				if k < 0 {
					return nil, fmt.Errorf("%s.%s: unterminated literal", t.Name(), f.Name)
				}
				out = append(out, tagToken{tag[j : j+k+2], fp})
				j += k + 2
			default:
				k := j
				for k < len(tag) && (isAlnum(tag[k]) || tag[k] == '_') {
					k++
				}
				if k == j {
					return nil, fmt.Errorf("%s.%s: unexpected %q in tag", t.Name(), f.Name, c)
				}
				out = append(out, tagToken{tag[j:k], fp})
				j = k
			}
		}
	}
	return out, nil
}

type tagParser struct {
	toks []tagToken
	i    int
	typ  reflect.Type
}

func (p *tagParser) peek() string {
	if p.i < len(p.toks) {
		return p.toks[p.i].s
	}
	return ""
}

func (p *tagParser) alt() (*gexpr, error) {
	var items []*gexpr
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
	return &gexpr{kind: "alt", items: items}, nil
}

func (p *tagParser) seq() (*gexpr, error) {
	var items []*gexpr
	for {
		switch p.peek() {
		case "", "|", ")":
			if len(items) == 0 {
				return nil, fmt.Errorf("%s: empty sequence", p.typ.Name())
			}
			return &gexpr{kind: "seq", items: items}, nil
		}
		t, err := p.term()
		if err != nil {
			return nil, err
		}
		items = append(items, t)
	}
}

func (p *tagParser) term() (*gexpr, error) {
	tok := p.toks[p.i]
	p.i++
	var e *gexpr
	switch {
	case tok.s == "@@":
		ft := tok.field.Type
		for ft.Kind() == reflect.Pointer || ft.Kind() == reflect.Slice {
			ft = ft.Elem()
		}
		e = &gexpr{kind: "strct", field: tok.field, typ: ft}
	case tok.s == "@":
		a, err := p.atom()
		if err != nil {
			return nil, err
		}
		e = &gexpr{kind: "capture", items: []*gexpr{a}, field: tok.field}
	default:
		p.i--
		a, err := p.atom()
		if err != nil {
			return nil, err
		}
		e = a
	}
	switch m := p.peek(); m {
	case "?", "*", "+":
		p.i++
		e = &gexpr{kind: "group", items: []*gexpr{e}, mode: m[0]}
	}
	return e, nil
}

func (p *tagParser) atom() (*gexpr, error) {
	tok := p.toks[p.i]
	p.i++
	switch {
	case tok.s == "(":
		e, err := p.alt()
		if err != nil {
			return nil, err
		}
		if p.peek() != ")" {
			return nil, fmt.Errorf("%s: missing )", p.typ.Name())
		}
		p.i++
		return &gexpr{kind: "group", items: []*gexpr{e}}, nil
	case tok.s[0] == '\'':
		return &gexpr{kind: "lit", name: tok.s[1 : len(tok.s)-1]}, nil
	case isAlpha(tok.s[0]):
		if _, ok := tokenNames[tok.s]; !ok {
			return nil, fmt.Errorf("%s: unknown token type %s", p.typ.Name(), tok.s)
		}
		return &gexpr{kind: "ref", name: tok.s}, nil
	}
	return nil, fmt.Errorf("%s: unexpected %q", p.typ.Name(), tok.s)
}

// generator emits the parse functions. Each node's code is a Go
// expression of type int: genNoMatch (participle's nil result), genMatch,
// or genFail (participle's error).
type generator struct {
	b     bytes.Buffer
	done  map[reflect.Type]bool
	queue []reflect.Type
}

var (
	tokenT  = reflect.TypeOf(lexer.Token{})
	posT    = reflect.TypeOf(lexer.Position{})
	tokensT = reflect.TypeOf([]lexer.Token{})
)

func generateParsers() ([]byte, error) {
	g := &generator{done: map[reflect.Type]bool{}}
	g.b.WriteString("// Code generated by TestGeneratedParser from the grammar's struct tags; DO NOT EDIT.\n\npackage grammar\n\n")
	for _, r := range grammarRoots {
		g.want(reflect.TypeOf(r))
	}
	for len(g.queue) > 0 {
		t := g.queue[0]
		g.queue = g.queue[1:]
		if err := g.strct(t); err != nil {
			return nil, err
		}
	}
	src, err := format.Source(g.b.Bytes())
	if err != nil {
		return nil, fmt.Errorf("%w\n%s", err, g.b.Bytes())
	}
	return src, nil
}

func (g *generator) want(t reflect.Type) {
	if !g.done[t] {
		g.done[t] = true
		g.queue = append(g.queue, t)
	}
}

func (g *generator) strct(t reflect.Type) error {
	toks, err := tagTokens(t)
	if err != nil {
		return err
	}
	tp := &tagParser{toks: toks, typ: t}
	e, err := tp.alt()
	if err != nil {
		return err
	}
	if tp.i != len(toks) {
		return fmt.Errorf("%s: trailing %q", t.Name(), tp.peek())
	}
	fmt.Fprintf(&g.b, "// parse%s parses a %s: %s\n", t.Name(), t.Name(), ebnfOf(e))
	fmt.Fprintf(&g.b, "func (p *genParser) parse%s(n *%s) int {\n", t.Name(), t.Name())
	if f, ok := t.FieldByName("Pos"); ok && f.Type == posT {
		g.b.WriteString("n.Pos = p.toks[p.i].Pos\n")
	}
	code, err := g.node(e)
	if err != nil {
		return err
	}
	fmt.Fprintf(&g.b, "r := %s\n", code)
	if f, ok := t.FieldByName("EndPos"); ok && f.Type == posT {
		g.b.WriteString("n.EndPos = p.toks[p.i].Pos\n")
	}
	g.b.WriteString("return r\n}\n\n")
	return nil
}

// node returns the Go expression that parses e.
func (g *generator) node(e *gexpr) (string, error) {
	switch e.kind {
	case "ref":
		return fmt.Sprintf("p.ref(%s)", tokenConst(e.name)), nil
	case "lit":
		return fmt.Sprintf("p.lit(%q)", e.name), nil
	case "capture":
		return g.capture(e)
	case "strct":
		g.want(e.typ)
		f := e.field
		switch {
		case f.Type.Kind() == reflect.Pointer:
			return fmt.Sprintf("func() int { var c %s; r := p.parse%s(&c); if r != genNoMatch { cp := c; n.%s = &cp }; return r }()", e.typ.Name(), e.typ.Name(), f.Name), nil
		case f.Type.Kind() == reflect.Slice && f.Type.Elem().Kind() == reflect.Pointer:
			return fmt.Sprintf("func() int { var c %s; r := p.parse%s(&c); if r != genNoMatch { cp := c; n.%s = append(n.%s, &cp) }; return r }()", e.typ.Name(), e.typ.Name(), f.Name, f.Name), nil
		}
		return "", fmt.Errorf("@@ into %s: want a pointer or a slice of pointers", f.Type)
	case "seq":
		if len(e.items) == 1 {
			return g.node(e.items[0])
		}
		var b strings.Builder
		b.WriteString("func() int {\n")
		for i, it := range e.items {
			c, err := g.node(it)
			if err != nil {
				return "", err
			}
			if i == 0 {
				fmt.Fprintf(&b, "if r := %s; r != genMatch { return r }\n", c)
			} else {
				fmt.Fprintf(&b, "if %s != genMatch { return genFail }\n", c)
			}
		}
		b.WriteString("return genMatch\n}()")
		return b.String(), nil
	case "alt":
		var b strings.Builder
		b.WriteString("func() int {\nfailed := false\n")
		for _, it := range e.items {
			c, err := g.node(it)
			if err != nil {
				return "", err
			}
			fmt.Fprintf(&b, "{ i, saved := p.i, *n\nswitch %s {\ncase genMatch: return genMatch\ncase genFail: failed = true\n}\np.i, *n = i, saved }\n", c)
		}
		b.WriteString("if failed { return genFail }\nreturn genNoMatch\n}()")
		return b.String(), nil
	case "group":
		c, err := g.node(e.items[0])
		if err != nil {
			return "", err
		}
		switch e.mode {
		case 0:
			return c, nil
		case '?':
			return fmt.Sprintf("func() int { i, saved := p.i, *n; if %s != genMatch { p.i, *n = i, saved }; return genMatch }()", c), nil
		case '*', '+':
			min := 0
			if e.mode == '+' {
				min = 1
			}
			return fmt.Sprintf("func() int { k := 0; for { i, saved := p.i, *n; if %s != genMatch { p.i, *n = i, saved; break }; k++ }; if k < %d { return genNoMatch }; return genMatch }()", c, min), nil
		}
	}
	return "", fmt.Errorf("unknown node %s", e.kind)
}

// capture parses e's node and stores what it matched in e's field.
func (g *generator) capture(e *gexpr) (string, error) {
	f := e.field
	inner := e.items[0]
	// Captures of single tokens: a ref or a literal, maybe in a group of
	// alternatives of those.
	var cond []string
	var collect func(x *gexpr) bool
	collect = func(x *gexpr) bool {
		switch x.kind {
		case "ref":
			cond = append(cond, fmt.Sprintf("t.Type == %s", tokenConst(x.name)))
			return true
		case "lit":
			cond = append(cond, fmt.Sprintf("t.Value == %q", x.name))
			return true
		case "group":
			return x.mode == 0 && collect(x.items[0])
		case "seq":
			return len(x.items) == 1 && collect(x.items[0])
		case "alt":
			for _, it := range x.items {
				if !collect(it) {
					return false
				}
			}
			return true
		}
		return false
	}
	if !collect(inner) {
		return "", fmt.Errorf("capture into %s: only tokens are captured", f.Name)
	}
	var set string
	switch {
	case f.Type == tokenT:
		set = fmt.Sprintf("n.%s = t", f.Name)
	case f.Type == tokensT:
		set = fmt.Sprintf("n.%s = append(n.%s, t)", f.Name, f.Name)
	case f.Type.Kind() == reflect.Bool:
		set = fmt.Sprintf("n.%s = true", f.Name)
	case f.Type.Kind() == reflect.String:
		set = fmt.Sprintf("n.%s += t.Value", f.Name)
	default:
		return "", fmt.Errorf("capture into %s of type %s", f.Name, f.Type)
	}
	return fmt.Sprintf("func() int { t := p.toks[p.i]; if t.Type != lexerEOF && (%s) { p.i++; %s; return genMatch }; return genNoMatch }()", strings.Join(cond, " || "), set), nil
}

func tokenConst(name string) string {
	if name == "EOF" {
		return "lexerEOF"
	}
	return "tok" + name
}

// ebnfOf renders e for the generated functions' comments.
func ebnfOf(e *gexpr) string {
	switch e.kind {
	case "ref":
		return e.name
	case "lit":
		return "'" + e.name + "'"
	case "capture":
		return "@" + ebnfOf(e.items[0])
	case "strct":
		return e.typ.Name()
	case "seq", "alt":
		sep := " "
		if e.kind == "alt" {
			sep = " | "
		}
		parts := make([]string, len(e.items))
		for i, it := range e.items {
			parts[i] = ebnfOf(it)
		}
		return strings.Join(parts, sep)
	case "group":
		s := "(" + ebnfOf(e.items[0]) + ")"
		if e.mode != 0 {
			s += string(e.mode)
		}
		return s
	}
	return "?"
}
