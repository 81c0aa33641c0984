package shell

import (
	"bytes"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// printfCommand is what a script's printf is run as: the interpreter's
// own printf has no precision ("%.3s", "%5.1f").
const printfCommand = "\x00ktrace-printf"

// shPrintf is busybox's printf: FORMAT is applied to the arguments, again
// while some are left; escapes (\n, \t, \NNN, ...) are read in FORMAT and
// in %b's argument, where \c ends the output; numbers may be decimal,
// 0x hex, 0 octal or 'C (the character's code); a conversion with no
// argument left takes "" (a NUL for %c), a number 0 with busybox's
// complaint. What it cannot read is said on stderr and makes the status
// 1, the number read as 0. The output goes to w in one write.
func shPrintf(w, stderr io.Writer, args []string) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, "printf: usage: printf FORMAT [ARGUMENT...]")
		return 1
	}
	p := &printer{stderr: stderr, args: args[1:]}
	format := args[0]
	for {
		used := len(p.args)
		if p.format(format) {
			break
		}
		if len(p.args) == 0 || len(p.args) == used {
			break
		}
	}
	if p.out.Len() > 0 {
		if _, err := w.Write(p.out.Bytes()); err != nil {
			return 1
		}
	}
	return p.status
}

type printer struct {
	out    bytes.Buffer
	stderr io.Writer
	args   []string
	status int
}

// next takes the next argument ("" when none is left).
func (p *printer) next() string {
	if len(p.args) == 0 {
		return ""
	}
	a := p.args[0]
	p.args = p.args[1:]
	return a
}

// format writes one pass of f; it reports whether \c ended the output.
func (p *printer) format(f string) bool {
	for i := 0; i < len(f); i++ {
		c := f[i]
		switch {
		case c == '\\':
			n, stop := escape(&p.out, f[i+1:], false)
			if stop {
				return true
			}
			i += n
		case c == '%' && i+1 < len(f) && f[i+1] == '%':
			p.out.WriteByte('%')
			i++
		case c == '%':
			n, stop := p.conversion(f[i+1:])
			if stop {
				return true
			}
			i += n
		default:
			p.out.WriteByte(c)
		}
	}
	return false
}

// conversion writes the conversion spec starts (after its '%'), and
// returns how many bytes of spec it took.
func (p *printer) conversion(spec string) (int, bool) {
	j := 0
	for j < len(spec) && strings.IndexByte("-+ #0", spec[j]) >= 0 {
		j++
	}
	flags := spec[:j]
	width, j := p.count(spec, j)
	prec := ""
	if j < len(spec) && spec[j] == '.' {
		var n string
		n, j = p.count(spec, j+1)
		if n == "" {
			n = "0"
		}
		prec = "." + n
	}
	// Length modifiers mean nothing here.
	for j < len(spec) && strings.IndexByte("hlLqjzt", spec[j]) >= 0 {
		j++
	}
	if j >= len(spec) {
		fmt.Fprintf(p.stderr, "printf: %%%s: invalid format\n", spec)
		p.status = 1
		return j, false
	}
	verb := spec[j]
	goFmt := "%" + flags + width + prec
	switch verb {
	case 'd', 'i':
		fmt.Fprintf(&p.out, goFmt+"d", p.integer())
	case 'o', 'u', 'x', 'X':
		v := uint64(p.integer())
		if verb == 'u' {
			verb = 'd'
		}
		fmt.Fprintf(&p.out, goFmt+string(verb), v)
	case 'e', 'E', 'f', 'F', 'g', 'G':
		if verb == 'F' {
			verb = 'f'
		}
		fmt.Fprintf(&p.out, goFmt+string(verb), p.float())
	case 'c':
		a := p.next()
		if a == "" {
			a = "\x00"
		}
		a = a[:1]
		fmt.Fprintf(&p.out, "%"+flags+width+"s", a)
	case 's':
		fmt.Fprintf(&p.out, goFmt+"s", p.next())
	case 'b':
		var b bytes.Buffer
		a := p.next()
		stop := false
		for k := 0; k < len(a); k++ {
			if a[k] != '\\' {
				b.WriteByte(a[k])
				continue
			}
			n, s := escape(&b, a[k+1:], true)
			if s {
				stop = true
				break
			}
			k += n
		}
		fmt.Fprintf(&p.out, goFmt+"s", b.String())
		if stop {
			return j + 1, true
		}
	default:
		fmt.Fprintf(p.stderr, "printf: %%%c: invalid format\n", verb)
		p.status = 1
	}
	return j + 1, false
}

// count reads a width or precision at spec[j]: digits, or '*' taking an
// argument.
func (p *printer) count(spec string, j int) (string, int) {
	if j < len(spec) && spec[j] == '*' {
		return strconv.FormatInt(p.integer(), 10), j + 1
	}
	k := j
	for k < len(spec) && spec[k] >= '0' && spec[k] <= '9' {
		k++
	}
	return spec[j:k], k
}

// integer reads the next argument as a number.
func (p *printer) integer() int64 {
	a := p.next()
	if a != "" && (a[0] == '\'' || a[0] == '"') {
		if len(a) < 2 {
			return 0
		}
		return int64(a[1])
	}
	s := strings.TrimLeft(a, " \t")
	if v, err := strconv.ParseInt(s, 0, 64); err == nil {
		return v
	}
	if v, err := strconv.ParseUint(s, 0, 64); err == nil {
		return int64(v)
	}
	fmt.Fprintf(p.stderr, "printf: invalid number '%s'\n", a)
	p.status = 1
	return 0
}

// float reads the next argument as a floating-point number.
func (p *printer) float() float64 {
	a := p.next()
	if a != "" && (a[0] == '\'' || a[0] == '"') {
		if len(a) < 2 {
			return 0
		}
		return float64(a[1])
	}
	v, err := strconv.ParseFloat(strings.TrimLeft(a, " \t"), 64)
	if err != nil {
		fmt.Fprintf(p.stderr, "printf: invalid number '%s'\n", a)
		p.status = 1
	}
	return v
}

// escape writes the escape sequence s starts (after its backslash) and
// returns how many bytes of s it took; stop reports \c. In %b's argument
// (arg) an octal escape is \0NNN, in a format \NNN.
func escape(b *bytes.Buffer, s string, arg bool) (int, bool) {
	if s == "" {
		b.WriteByte('\\')
		return 0, false
	}
	switch c := s[0]; c {
	case 'a':
		b.WriteByte('\a')
	case 'b':
		b.WriteByte('\b')
	case 'f':
		b.WriteByte('\f')
	case 'n':
		b.WriteByte('\n')
	case 'r':
		b.WriteByte('\r')
	case 't':
		b.WriteByte('\t')
	case 'v':
		b.WriteByte('\v')
	case '\\':
		b.WriteByte('\\')
	case 'c':
		return 1, true
	case '0', '1', '2', '3', '4', '5', '6', '7':
		start, max := 0, 3
		if arg && c == '0' {
			start, max = 1, 4
		}
		k, v := start, 0
		for k < len(s) && k < max && s[k] >= '0' && s[k] <= '7' {
			v = v*8 + int(s[k]-'0')
			k++
		}
		b.WriteByte(byte(v))
		return k, false
	default:
		b.WriteByte('\\')
		b.WriteByte(c)
	}
	return 1, false
}
