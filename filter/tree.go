package filter

import (
	"fmt"
	"strings"
)

// buildTree turns the structure tokens of an accepted expression into a
// tree with the usual reading: "!" binds tightest, then "&&", then "||".
// Operators with nothing after them (which the kernel accepts and
// ignores) are dropped.
func buildTree(toks []tok) Node {
	b := &treeBuilder{toks: toks}
	return b.or()
}

type treeBuilder struct {
	toks []tok
	i    int
}

func (b *treeBuilder) peek() byte {
	if b.i < len(b.toks) {
		return b.toks[b.i].kind
	}
	return 0
}

func (b *treeBuilder) or() Node {
	x := b.and()
	for b.peek() == '|' {
		b.i++
		y := b.and()
		if y == nil {
			break
		}
		x = &Or{X: x, Y: y}
	}
	return x
}

func (b *treeBuilder) and() Node {
	x := b.factor()
	for b.peek() == '&' {
		b.i++
		y := b.factor()
		if y == nil {
			break
		}
		x = &And{X: x, Y: y}
	}
	return x
}

func (b *treeBuilder) factor() Node {
	switch b.peek() {
	case '!':
		pos := b.toks[b.i].pos
		b.i++
		x := b.factor()
		if x == nil {
			return nil
		}
		return &Not{Pos: pos, X: x}
	case '(':
		b.i++
		x := b.or()
		if b.peek() == ')' {
			b.i++
		}
		return x
	case 'p':
		p := b.toks[b.i].pred
		b.i++
		return p
	}
	return nil
}

// String prints the tree fully parenthesised, predicates as written.
func String(n Node) string {
	switch n := n.(type) {
	case *And:
		return "(" + String(n.X) + " && " + String(n.Y) + ")"
	case *Or:
		return "(" + String(n.X) + " || " + String(n.Y) + ")"
	case *Not:
		return "!" + String(n.X)
	case *Pred:
		return strings.TrimSpace(n.Text)
	case nil:
		return "<nil>"
	}
	return fmt.Sprintf("%T", n)
}
