package shell

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"regexp"
	"strconv"
	"strings"

	"github.com/ktrace-dev/ktrace/grammar"
	"github.com/ktrace-dev/ktrace/tracefs"
	"mvdan.cc/sh/v3/interp"
)

// A utility is a small built-in counterpart of a busybox applet that can
// read the emulated tracefs. It returns the exit status.
type utility func(u *utilCtx, args []string) int

// utilities are the applets `ktrace sh` runs itself when the emulated
// tracefs is involved.
var utilities = map[string]utility{
	"cat":  utilCat,
	"ls":   utilLs,
	"grep": utilGrep,
	"head": utilHead,
	"tail": utilTail,
	"wc":   utilWc,
	"tee":  utilTee,
}

// utilCtx is what a utility sees: its name, standard streams and a way to
// open paths (emulated or real).
type utilCtx struct {
	name   string
	s      *shell
	hc     interp.HandlerContext
	stdin  io.Reader
	out    io.Writer
	stderr io.Writer
}

func (u *utilCtx) errorf(format string, args ...any) {
	fmt.Fprintf(u.stderr, u.name+": "+format+"\n", args...)
}

// open opens a path for reading; "-" is stdin.
func (u *utilCtx) open(name string) (io.ReadCloser, error) {
	if name == "-" {
		return io.NopCloser(u.stdin), nil
	}
	abs := absIn(u.hc.Dir, name)
	if rel, ok := emulated(abs); ok {
		h, err := u.s.fs.Open(rel, os.O_RDONLY)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, cErrno{grammar.ErrnoOf(err)})
		}
		return h, nil
	}
	f, err := os.Open(abs)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, cErrno{grammar.ErrnoOf(err)})
	}
	return f, nil
}

func (u *utilCtx) stat(name string) (fs.FileInfo, error) {
	abs := absIn(u.hc.Dir, name)
	if rel, ok := emulated(abs); ok {
		return u.s.fs.Stat(rel)
	}
	return os.Stat(abs)
}

func (u *utilCtx) readDir(name string) ([]fs.DirEntry, error) {
	abs := absIn(u.hc.Dir, name)
	if rel, ok := emulated(abs); ok {
		return u.s.fs.ReadDir(rel)
	}
	return os.ReadDir(abs)
}

// runUtility runs a built-in utility. Its output to an emulated file is
// one write(2).
func (s *shell) runUtility(ctx context.Context, hc interp.HandlerContext, fn utility, args []string) error {
	u := &utilCtx{name: args[0], s: s, hc: hc, stdin: hc.Stdin, out: hc.Stdout, stderr: hc.Stderr}
	if u.stdin == nil {
		u.stdin = strings.NewReader("")
	}
	var buf bytes.Buffer
	f, toFile := hc.Stdout.(*shFile)
	if toFile {
		u.out = &buf
	}
	st := fn(u, args[1:])
	if toFile && buf.Len() > 0 {
		if _, err := f.File.WriteFull(buf.Bytes()); err != nil {
			fmt.Fprintf(hc.Stderr, "%s: write error: %s\n", args[0], grammar.Strerror(grammar.ErrnoOf(err)))
			return interp.ExitStatus(1)
		}
	}
	if st != 0 {
		return interp.ExitStatus(uint8(st))
	}
	return nil
}

// eachInput calls fn for each named input (stdin when none); the status is
// 1 if any could not be opened.
func (u *utilCtx) eachInput(names []string, fn func(name string, r io.Reader)) int {
	if len(names) == 0 {
		names = []string{"-"}
	}
	st := 0
	for _, n := range names {
		r, err := u.open(n)
		if err != nil {
			// busybox: "grep: NAME: msg", the others "can't open 'NAME': msg".
			if u.name == "grep" {
				u.errorf("%v", err)
			} else {
				u.errorf("can't open '%s': %s", n, grammar.Strerror(grammar.ErrnoOf(err)))
			}
			st = 1
			continue
		}
		fn(n, r)
		r.Close()
	}
	return st
}

func utilCat(u *utilCtx, args []string) int {
	files := []string{}
	for _, a := range args {
		if a == "-u" {
			continue
		}
		files = append(files, a)
	}
	return u.eachInput(files, func(_ string, r io.Reader) {
		if _, err := io.Copy(u.out, r); err != nil {
			u.errorf("read error: %v", err)
		}
	})
}

func utilLs(u *utilCtx, args []string) int {
	var all, long, dirOnly bool
	var names []string
	for _, a := range args {
		if strings.HasPrefix(a, "-") && len(a) > 1 {
			for _, c := range a[1:] {
				switch c {
				case 'a', 'A':
					all = true
				case 'l':
					long = true
				case 'd':
					dirOnly = true
				case '1', 'F':
				default:
					u.errorf("unsupported option -%c", c)
					return 2
				}
			}
			continue
		}
		names = append(names, a)
	}
	if len(names) == 0 {
		names = []string{"."}
	}
	st := 0
	show := func(name string, fi fs.FileInfo) {
		if long {
			fmt.Fprintf(u.out, "%s    1 0        0                0 %s %s\n", fi.Mode().String(), fi.ModTime().Format("Jan _2 15:04"), name)
			return
		}
		fmt.Fprintln(u.out, name)
	}
	for i, n := range names {
		fi, err := u.stat(n)
		if err != nil {
			u.errorf("%s: No such file or directory", n)
			st = 1
			continue
		}
		if !fi.IsDir() || dirOnly {
			show(n, fi)
			continue
		}
		des, err := u.readDir(n)
		if err != nil {
			u.errorf("%s: %s", n, grammar.Strerror(grammar.ErrnoOf(err)))
			st = 1
			continue
		}
		if len(names) > 1 {
			if i > 0 {
				fmt.Fprintln(u.out)
			}
			fmt.Fprintf(u.out, "%s:\n", n)
		}
		if long {
			// tracefs files all have size 0.
			fmt.Fprintln(u.out, "total 0")
		}
		for _, d := range des {
			if !all && strings.HasPrefix(d.Name(), ".") {
				continue
			}
			info, err := d.Info()
			if err != nil {
				continue
			}
			show(d.Name(), info)
		}
	}
	return st
}

// breToERE turns a POSIX basic regular expression into Go (ERE) syntax:
// \( \) \{ \} \| \+ \? are the operators and their plain forms literal;
// ^ anchors only at the start of the pattern or of a group, $ only at the
// end of either, and * is literal where it repeats nothing; a bracket
// expression is copied with its backslashes literal.
func breToERE(p string) string {
	var b strings.Builder
	start := true // at the start of the pattern or of a group
	for i := 0; i < len(p); i++ {
		c := p[i]
		atStart := start
		start = false
		switch {
		case c == '\\' && i+1 < len(p):
			n := p[i+1]
			i++
			switch n {
			case '(', '|':
				b.WriteByte(n)
				start = true
			case ')', '{', '}', '+', '?':
				b.WriteByte(n)
			default:
				b.WriteByte('\\')
				b.WriteByte(n)
			}
		case c == '^' && atStart:
			b.WriteByte(c)
			start = true // a * after ^ is literal too
		case c == '$' && (i+1 == len(p) || strings.HasPrefix(p[i+1:], "\\)") || strings.HasPrefix(p[i+1:], "\\|")):
			b.WriteByte(c)
		case c == '*' && atStart:
			b.WriteString("\\*")
		case c == '[':
			j := bracketEnd(p, i)
			if j < 0 {
				b.WriteString("\\[")
				continue
			}
			b.WriteByte('[')
			for _, r := range p[i+1 : j] {
				if r == '\\' {
					b.WriteString("\\\\")
					continue
				}
				b.WriteRune(r)
			}
			b.WriteByte(']')
			i = j
		case strings.IndexByte("(){}|+?^$", c) >= 0:
			b.WriteByte('\\')
			b.WriteByte(c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// bracketEnd is the index of the ] closing the bracket expression that
// opens at p[i] ('['), or -1: a ] first (after an optional ^) is a
// member, and [: :], [. .] and [= =] are skipped whole.
func bracketEnd(p string, i int) int {
	j := i + 1
	if j < len(p) && p[j] == '^' {
		j++
	}
	if j < len(p) && p[j] == ']' {
		j++
	}
	for ; j < len(p); j++ {
		switch {
		case p[j] == ']':
			return j
		case p[j] == '[' && j+1 < len(p) && strings.IndexByte(":.=", p[j+1]) >= 0:
			end := strings.Index(p[j+2:], string(p[j+1])+"]")
			if end < 0 {
				return -1
			}
			j += 2 + end + 1
		}
	}
	return -1
}

func utilGrep(u *utilCtx, args []string) int {
	var quiet, invert, count, icase, number, ere, fixed, word, line, listFiles, noName, withName, only bool
	// after and before are the context lines (-A, -B, -C).
	var after, before int
	var patterns []string
	var files []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			files = append(files, args[i+1:]...)
			break
		}
		if strings.HasPrefix(a, "-") && len(a) > 1 {
			for j := 1; j < len(a); j++ {
				switch a[j] {
				case 'q', 's':
					quiet = quiet || a[j] == 'q'
				case 'v':
					invert = true
				case 'c':
					count = true
				case 'i':
					icase = true
				case 'n':
					number = true
				case 'E':
					ere = true
				case 'F':
					fixed = true
				case 'w':
					word = true
				case 'x':
					line = true
				case 'o':
					only = true
				case 'l':
					listFiles = true
				case 'h':
					noName, withName = true, false
				case 'H':
					withName, noName = true, false
				case 'A', 'B', 'C':
					// The number follows, attached or as the next
					// argument.
					v := a[j+1:]
					if v == "" && i+1 < len(args) {
						i++
						v = args[i]
					}
					n, err := strconv.Atoi(v)
					if err != nil || n < 0 {
						u.errorf("invalid context length argument: %s", v)
						return 2
					}
					switch a[j] {
					case 'A':
						after = n
					case 'B':
						before = n
					default:
						after, before = n, n
					}
					j = len(a)
				case 'e':
					if j+1 < len(a) {
						patterns = append(patterns, a[j+1:])
					} else if i+1 < len(args) {
						i++
						patterns = append(patterns, args[i])
					}
					j = len(a)
				default:
					u.errorf("unsupported option -%c", a[j])
					return 2
				}
			}
			continue
		}
		if patterns == nil {
			patterns = []string{a}
			continue
		}
		files = append(files, a)
	}
	if patterns == nil {
		u.errorf("no pattern")
		return 2
	}
	var res []string
	for _, p := range patterns {
		for _, alt := range strings.Split(p, "\n") {
			switch {
			case fixed:
				alt = regexp.QuoteMeta(alt)
			case !ere:
				alt = breToERE(alt)
			}
			if word {
				alt = `\b(?:` + alt + `)\b`
			}
			if line {
				alt = `^(?:` + alt + `)$`
			}
			res = append(res, "(?:"+alt+")")
		}
	}
	expr := strings.Join(res, "|")
	if icase {
		expr = "(?i)" + expr
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		u.errorf("bad regex: %v", err)
		return 2
	}
	// POSIX's leftmost-longest match, which -o prints.
	re.Longest()
	matched := false
	multi := (len(files) > 1 || withName) && !noName
	// Context lines print with "-" where matches have ":", and a "--"
	// line parts groups that do not touch, as GNU and busybox grep do.
	printed := 0 // the last line number printed, of any input
	st := u.eachInput(files, func(name string, r io.Reader) {
		if name == "-" {
			name = "(standard input)"
		}
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 64*1024), 4*1024*1024)
		n := 0
		emit := func(ln int, text string, sep string) {
			if (after > 0 || before > 0) && printed > 0 && ln > printed+1 {
				fmt.Fprintln(u.out, "--")
			}
			prefix := ""
			if multi {
				prefix = name + sep
			}
			if number {
				prefix += strconv.Itoa(ln) + sep
			}
			fmt.Fprintf(u.out, "%s%s\n", prefix, text)
			printed = ln
		}
		type held struct {
			ln   int
			text string
		}
		var back []held // up to before lines not printed yet
		left := 0       // context lines still to print after a match
		printed = 0
		for ln := 1; sc.Scan(); ln++ {
			text := sc.Text()
			if re.MatchString(text) == invert {
				if left > 0 && !(quiet || count || listFiles) {
					emit(ln, text, "-")
					left--
					continue
				}
				if before > 0 {
					back = append(back, held{ln, text})
					if len(back) > before {
						back = back[1:]
					}
				}
				continue
			}
			matched = true
			n++
			if quiet || count || listFiles {
				continue
			}
			if only {
				// Each non-empty match on a line of its own, without
				// context; an inverted match has none to print.
				if !invert {
					for _, m := range re.FindAllString(text, -1) {
						if m != "" {
							emit(ln, m, ":")
						}
					}
				}
				continue
			}
			for _, h := range back {
				emit(h.ln, h.text, "-")
			}
			back = back[:0]
			emit(ln, text, ":")
			left = after
		}
		switch {
		case quiet:
		case listFiles:
			if n > 0 {
				fmt.Fprintln(u.out, name)
			}
		case count:
			if multi {
				fmt.Fprintf(u.out, "%s:%d\n", name, n)
			} else {
				fmt.Fprintf(u.out, "%d\n", n)
			}
		}
	})
	if st != 0 && !(quiet && matched) {
		return 2
	}
	if matched {
		return 0
	}
	return 1
}

// lineCount parses head/tail's "-n N", "-nN" and "-N" forms.
func lineCount(u *utilCtx, args []string) (int, []string, bool) {
	n := 10
	var files []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		var v string
		switch {
		case a == "-n" && i+1 < len(args):
			i++
			v = args[i]
		case strings.HasPrefix(a, "-n"):
			v = a[2:]
		case len(a) > 1 && a[0] == '-' && a[1] >= '0' && a[1] <= '9':
			v = a[1:]
		default:
			files = append(files, a)
			continue
		}
		k, err := strconv.Atoi(strings.TrimPrefix(v, "+"))
		if err != nil || k < 0 {
			u.errorf("invalid number '%s'", v)
			return 0, nil, false
		}
		n = k
	}
	return n, files, true
}

func readLinesAll(r io.Reader) []string {
	data, _ := io.ReadAll(r)
	if len(data) == 0 {
		return nil
	}
	s := string(data)
	lines := strings.SplitAfter(s, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}

func headTail(u *utilCtx, args []string, tail bool) int {
	n, files, ok := lineCount(u, args)
	if !ok {
		return 1
	}
	multi := len(files) > 1
	first := true
	return u.eachInput(files, func(name string, r io.Reader) {
		if multi {
			if !first {
				fmt.Fprintln(u.out)
			}
			fmt.Fprintf(u.out, "==> %s <==\n", name)
		}
		first = false
		lines := readLinesAll(r)
		if tail {
			if len(lines) > n {
				lines = lines[len(lines)-n:]
			}
		} else if len(lines) > n {
			lines = lines[:n]
		}
		for _, l := range lines {
			io.WriteString(u.out, l)
		}
	})
}

func utilHead(u *utilCtx, args []string) int { return headTail(u, args, false) }
func utilTail(u *utilCtx, args []string) int { return headTail(u, args, true) }

func utilWc(u *utilCtx, args []string) int {
	var wantL, wantW, wantC bool
	var files []string
	for _, a := range args {
		if strings.HasPrefix(a, "-") && len(a) > 1 {
			for _, c := range a[1:] {
				switch c {
				case 'l':
					wantL = true
				case 'w':
					wantW = true
				case 'c', 'm':
					wantC = true
				default:
					u.errorf("unsupported option -%c", c)
					return 1
				}
			}
			continue
		}
		files = append(files, a)
	}
	if !wantL && !wantW && !wantC {
		wantL, wantW, wantC = true, true, true
	}
	single := (wantL && !wantW && !wantC) || (!wantL && wantW && !wantC) || (!wantL && !wantW && wantC)
	var tl, tw, tc int
	print := func(l, w, c int, name string) {
		var cols []string
		for _, x := range []struct {
			on bool
			v  int
		}{{wantL, l}, {wantW, w}, {wantC, c}} {
			if !x.on {
				continue
			}
			if single {
				cols = append(cols, strconv.Itoa(x.v))
			} else {
				cols = append(cols, fmt.Sprintf("%7d", x.v))
			}
		}
		s := strings.Join(cols, " ")
		if name != "" {
			s += " " + name
		}
		fmt.Fprintln(u.out, s)
	}
	st := u.eachInput(files, func(name string, r io.Reader) {
		data, _ := io.ReadAll(r)
		l := bytes.Count(data, []byte("\n"))
		w := len(strings.Fields(string(data)))
		c := len(data)
		tl, tw, tc = tl+l, tw+w, tc+c
		if name == "-" {
			name = ""
		}
		print(l, w, c, name)
	})
	if len(files) > 1 {
		print(tl, tw, tc, "total")
	}
	return st
}

// teeBufSize is how much tee reads from its input at a time; each read is
// one write(2) to every file, as in GNU tee.
const teeBufSize = 128 * 1024

// utilTee is tee as GNU coreutils runs it: each FILE is opened O_WRONLY
// with O_APPEND (-a) or O_TRUNC, and what is read from stdin is written to
// stdout and, as one write(2), to each file. A file that cannot be opened
// or written is reported ("tee: FILE: strerror") and dropped, and the
// status is 1. (busybox's tee -a opens through stdio's fopen("a"), whose
// seek to the end tracefs refuses with EINVAL, so on a real tracefs
// `echo LINE | busybox tee -a kprobe_events` fails where GNU tee works;
// ktrace follows GNU tee.)
func utilTee(u *utilCtx, args []string) int {
	appendMode := false
	var names []string
	for i, a := range args {
		if a == "--" {
			names = append(names, args[i+1:]...)
			break
		}
		if strings.HasPrefix(a, "-") && len(a) > 1 && len(names) == 0 {
			for _, c := range a[1:] {
				switch c {
				case 'a':
					appendMode = true
				case 'i', 'p':
				default:
					u.errorf("invalid option -- '%c'", c)
					return 1
				}
			}
			continue
		}
		names = append(names, a)
	}
	flag := os.O_WRONLY | os.O_CREATE | os.O_TRUNC
	if appendMode {
		flag = os.O_WRONLY | os.O_CREATE | os.O_APPEND
	}
	type out struct {
		name string
		w    io.WriteCloser
	}
	st := 0
	var outs []*out
	for _, n := range names {
		w, err := u.openWrite(n, flag)
		if err != nil {
			u.errorf("%s: %s", n, grammar.Strerror(grammar.ErrnoOf(err)))
			st = 1
			continue
		}
		outs = append(outs, &out{n, w})
	}
	write := func(b []byte) {
		u.out.Write(b)
		for _, o := range outs {
			if o.w == nil {
				continue
			}
			if _, werr := o.w.Write(b); werr != nil {
				u.errorf("%s: %s", o.name, grammar.Strerror(grammar.ErrnoOf(werr)))
				o.w.Close()
				o.w = nil
				st = 1
			}
		}
	}
	// The interpreter's echo and printf write a line into a pipe in
	// pieces, where busybox's and bash's write it whole; what has been
	// read is written up to its last newline, so that each line they
	// write reaches the files in one write(2), as from a real shell.
	buf := make([]byte, teeBufSize)
	var pending []byte
	for {
		k, err := u.stdin.Read(buf)
		pending = append(pending, buf[:k]...)
		if i := bytes.LastIndexByte(pending, '\n'); i >= 0 {
			write(pending[:i+1])
			pending = append(pending[:0], pending[i+1:]...)
		} else if len(pending) >= teeBufSize {
			write(pending)
			pending = pending[:0]
		}
		if err != nil {
			break
		}
	}
	if len(pending) > 0 {
		write(pending)
	}
	for _, o := range outs {
		if o.w != nil {
			o.w.Close()
		}
	}
	return st
}

// openWrite opens a path for writing with flag: an emulated file through
// the tracefs, another through the real system.
// fullWriter writes to an emulated file as a utility's write loop does
// (tracefs.File.WriteFull).
type fullWriter struct{ *tracefs.File }

func (w fullWriter) Write(p []byte) (int, error) { return w.File.WriteFull(p) }

func (u *utilCtx) openWrite(name string, flag int) (io.WriteCloser, error) {
	abs := absIn(u.hc.Dir, name)
	if rel, ok := emulated(abs); ok {
		h, err := u.s.fs.Open(rel, flag)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, cErrno{grammar.ErrnoOf(err)})
		}
		return fullWriter{h}, nil
	}
	f, err := os.OpenFile(abs, flag, 0o666)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, cErrno{grammar.ErrnoOf(err)})
	}
	return f, nil
}
