package shell

import (
	"strconv"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// Busybox's ash, running a script file, reports a redirection it cannot
// open as "SCRIPT: line N: can't create FILE: ERROR", N being the line
// of the command in the file, inside functions too (checked in the VM
// with busybox 1.35's sh). The interpreter gives the open handler no position, so markRedirects
// puts the line before each redirection's target, where the open
// handler finds it (cutRedirectMark).

// redirectMark starts and ends the line number put before a target.
const redirectMark = "\x01ktrace-line:"

// markRedirects prefixes the target of every file redirection of f with
// its line.
func markRedirects(f *syntax.File) {
	lines := map[*syntax.Redirect]uint{}
	syntax.Walk(f, func(n syntax.Node) bool {
		if st, ok := n.(*syntax.Stmt); ok {
			for _, rd := range st.Redirs {
				lines[rd] = st.Pos().Line()
			}
		}
		return true
	})
	for rd, line := range lines {
		if !fileRedirect(rd) {
			continue
		}
		lit := &syntax.Lit{ValuePos: rd.Word.Pos(), ValueEnd: rd.Word.Pos(), Value: redirectMark + strconv.FormatUint(uint64(line), 10) + "\x01"}
		rd.Word.Parts = append([]syntax.WordPart{lit}, rd.Word.Parts...)
	}
}

// fileRedirect reports whether rd opens a file named by its word.
func fileRedirect(rd *syntax.Redirect) bool {
	switch rd.Op {
	case syntax.RdrOut, syntax.AppOut, syntax.RdrIn, syntax.RdrInOut, syntax.RdrClob, syntax.RdrAll, syntax.AppAll:
	default:
		return false
	}
	if rd.Word == nil || len(rd.Word.Parts) == 0 {
		return false
	}
	for _, p := range rd.Word.Parts {
		if _, ok := p.(*syntax.ProcSubst); ok {
			return false
		}
	}
	return true
}

// cutRedirectMark takes markRedirects' line off path.
func cutRedirectMark(path string) (line int, rest string, ok bool) {
	s, found := strings.CutPrefix(path, redirectMark)
	if !found {
		return 0, path, false
	}
	num, rest, found := strings.Cut(s, "\x01")
	if !found {
		return 0, path, false
	}
	n, err := strconv.Atoi(num)
	if err != nil {
		return 0, path, false
	}
	return n, rest, true
}
