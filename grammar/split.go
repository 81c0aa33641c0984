package grammar

// isSpace reports whether c is whitespace for the kernel's argv_split, which
// uses C isspace(): space, \t, \n, \v, \f and \r.
func isSpace(c byte) bool {
	return c == ' ' || (c >= '\t' && c <= '\r')
}

// StripComment drops everything from the first '#' on, as the kernel does
// for every line written to a dynamic-event control file. There is no
// escaping: a '#' inside an immediate string starts a comment too.
func StripComment(line string) string {
	for i := 0; i < len(line); i++ {
		if line[i] == '#' {
			return line[:i]
		}
	}
	return line
}

// Split splits one command line into argv the way the kernel's argv_split
// does: tokens are separated by runs of C whitespace, leading and trailing
// whitespace is ignored, and there is no quoting or escaping.
func Split(line string) []string {
	n := 0
	for i := 0; i < len(line); {
		for i < len(line) && isSpace(line[i]) {
			i++
		}
		if i == len(line) {
			break
		}
		n++
		for i < len(line) && !isSpace(line[i]) {
			i++
		}
	}
	if n == 0 {
		return nil
	}
	argv := make([]string, 0, n)
	for i := 0; i < len(line); {
		for i < len(line) && isSpace(line[i]) {
			i++
		}
		if i == len(line) {
			break
		}
		start := i
		for i < len(line) && !isSpace(line[i]) {
			i++
		}
		argv = append(argv, line[start:i])
	}
	return argv
}

// Command joins argv with single spaces: the command text error_log shows.
func Command(argv []string) string {
	n := 0
	for _, a := range argv {
		n += len(a) + 1
	}
	if n == 0 {
		return ""
	}
	b := make([]byte, 0, n-1)
	for i, a := range argv {
		if i > 0 {
			b = append(b, ' ')
		}
		b = append(b, a...)
	}
	return string(b)
}
