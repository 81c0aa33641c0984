package fetchargs

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/ktrace-dev/ktrace/grammar"
	"github.com/ktrace-dev/ktrace/internal/vmtest"
	"github.com/ktrace-dev/ktrace/kernel"
)

// The files in testdata/vm are raw transcripts of tools/vmsh runs of
// testdata/vm/mkscript.sh over the cases-*.txt lists on the pinned
// kernels: for each line the write's errno, the error_log entries with
// their caret lines, the kprobe_events/dynamic_events readback and the
// field and print fmt lines of the event's format file. They are the
// golden expectations of TestVMTranscripts.

// vmCase is one line's observed result.
type vmCase struct {
	line     string
	errno    string // strerror text, "" on success
	logs     []vmLog
	readback []string
	format   []string
}

type vmLog struct {
	subsys, msg string
	pos         int
}

var logRe = regexp.MustCompile(`^E: \[[ 0-9.]+\] (\S+): error: (.*)$`)

func readTranscript(t *testing.T, path string) []*vmCase {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("reading transcript: %v", err)
	}
	defer f.Close()
	var out []*vmCase
	var cur *vmCase
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		l := sc.Text()
		switch {
		case strings.HasPrefix(l, "=== "):
			cur = &vmCase{line: l[4:]}
			out = append(out, cur)
		case cur == nil:
		case strings.HasPrefix(l, "rc="):
			if strings.HasPrefix(l, "rc=1") {
				cur.errno = strings.TrimSpace(l[4:])
			}
		case strings.HasPrefix(l, "E:   Command: "):
		case strings.HasPrefix(l, "E: ["):
			m := logRe.FindStringSubmatch(l)
			if m == nil {
				t.Fatalf("%s: bad log line %q", path, l)
			}
			cur.logs = append(cur.logs, vmLog{subsys: m[1], msg: m[2]})
		case strings.HasPrefix(l, "E: ") && strings.HasSuffix(l, "^"):
			// "E: " + 11 columns of "  Command: " + pos spaces.
			cur.logs[len(cur.logs)-1].pos = len(l) - 1 - 3 - 11
		case strings.HasPrefix(l, "R: "):
			cur.readback = append(cur.readback, l[3:])
		case strings.HasPrefix(l, "F: "):
			cur.format = append(cur.format, l[3:])
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// messageCode maps an error_log message of either kernel to its code.
func messageCode(msg string) (grammar.Code, bool) {
	switch msg {
	case "Invalid $-valiable specified", "Invalid $-variable specified":
		return grammar.ErrBadVar, true
	case "File offset is not available with kprobe":
		return grammar.ErrFileOnKprobe, true
	case "Invalid array size":
		return grammar.ErrBadArrayNum, true
	}
	for _, c := range grammar.Codes() {
		if c.Message() == msg {
			return c, true
		}
	}
	return grammar.ErrNone, false
}

var errnoText = map[syscall.Errno]string{
	syscall.EINVAL:     "Invalid argument",
	syscall.ENOENT:     "No such file or directory",
	syscall.E2BIG:      "Argument list too long",
	syscall.ERANGE:     "Numerical result out of range",
	syscall.EOPNOTSUPP: "Operation not supported",
	syscall.ENOMEM:     "Cannot allocate memory",
}

func dialectFor(m *kernel.Model) *grammar.Dialect {
	ma, mi, _ := m.KernelVersion()
	return grammar.DialectFor(ma, mi)
}

// lineResult is what the test driver computed for one line.
type lineResult struct {
	args   []*Arg
	err    error
	ret    bool
	kind   ProbeKind
	argv   []string
	skip   string // why the line is outside this package's scope
	logged []string
}

// runLine drives PrepareArgs and Parse over a probe line the way the
// kernel's create functions do, with a simplified view of the probe place
// (enough for the transcript lines), in the model's own dialect.
func runLine(m *kernel.Model, line string) lineResult {
	return runLineDialect(m, dialectFor(m), line)
}

// runLineDialect is runLine with the syntax of dialect d.
func runLineDialect(m *kernel.Model, d *grammar.Dialect, line string) lineResult {
	argv := strings.Fields(line)
	res := lineResult{argv: argv}
	if len(argv) < 2 {
		res.skip = "no place"
		return res
	}
	ctx := &Context{Model: m, Dialect: d}
	place := argv[1]
	switch argv[0][0] {
	case 'p', 'r':
		ctx.Kind = KProbe
		ctx.Return = argv[0][0] == 'r'
		if _, e := kstrtoul(place, 0); e == 0 {
			// Address probes get neither RETURN nor FENTRY.
			ctx.Return = false
			break
		}
		if strings.HasSuffix(place, "%return") {
			ctx.Return = true
			place = strings.TrimSuffix(place, "%return")
		}
		off := int64(0)
		if i := strings.IndexAny(place, "+-"); i >= 0 {
			off, _ = kstrtol(place[i:], 0)
			place = place[:i]
		}
		ctx.Func = place
		// kprobe_on_func_entry, as the event layer asks it.
		ctx.Entry = off >= 0 && m.KprobeOnFuncEntry(place, uint64(off)) == 0
		if i := strings.IndexByte(place, ':'); i >= 0 && !m.ModuleLoaded(place[:i]) {
			// A pending module probe is not known to be at an entry.
			ctx.Entry = false
		}
	case 'f':
		ctx.Kind = FProbe
		if strings.HasSuffix(place, "%return") {
			ctx.Return = true
			place = strings.TrimSuffix(place, "%return")
		}
		for _, a := range argv[2:] {
			if i := strings.Index(a, "$retval"); i >= 0 {
				rest := a[i+len("$retval"):]
				if rest == "" || !(isAlpha(rest[0]) || isDigit(rest[0]) || rest[0] == '_') {
					ctx.Return = true
				}
			}
		}
		ctx.Func = place
	case 't':
		ctx.Kind = TProbe
		ctx.Func = "__probestub_" + place
	}
	res.ret, res.kind = ctx.Return, ctx.Kind
	if ctx.Kind == KProbe && (argv[0][0] == 'r' || strings.HasSuffix(argv[1], "%return")) {
		res.ret = true // the format head of any r line, address-based too
	}
	toks, err := PrepareArgs(ctx, argv)
	if err != nil {
		res.err = err
		return res
	}
	res.logged = ctx.LoggedArgv(argv)
	for i, tok := range toks {
		a, err := Parse(ctx, tok, i, res.args)
		if err != nil {
			res.err = err
			return res
		}
		res.args = append(res.args, a)
	}
	return res
}

// formatLines renders the per-probe fields and print fmt as the kernel's
// format file does.
func formatLines(args []*Arg, ret bool) []string {
	var out []string
	off := 16
	head, headArgs := "(%lx)", ", REC->__probe_ip"
	if ret {
		off = 24
		head, headArgs = "(%lx <- %lx)", ", REC->__probe_func, REC->__probe_ret_ip"
	}
	signed := func(b bool) int {
		if b {
			return 1
		}
		return 0
	}
	for _, a := range args {
		out = append(out, fmt.Sprintf("\tfield:%s;\toffset:%d;\tsize:%d;\tsigned:%d;", a.FormatField(), off, a.Size, signed(a.Signed())))
		off += a.Size
	}
	var b strings.Builder
	b.WriteString(`print fmt: "` + head)
	for _, a := range args {
		b.WriteString(" " + a.Name + "=" + a.PrintFmt())
	}
	b.WriteString(`"` + headArgs)
	for _, a := range args {
		b.WriteString(", " + a.PrintArgs())
	}
	out = append(out, b.String())
	return out
}

func argCommandPos(argv []string, idx int) int {
	pos := 0
	for j := 0; j < idx && j < len(argv); j++ {
		pos += len(argv[j]) + 1
	}
	return pos
}

func TestVMTranscripts(t *testing.T) {
	files, err := filepath.Glob("testdata/vm/6.*-*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no transcripts: %v", err)
	}
	for _, path := range files {
		base := filepath.Base(path)
		kname := base[:strings.IndexByte(base, '-')]
		m := vmtest.Model(t, kname)
		for _, c := range readTranscript(t, path) {
			c := c
			t.Run(kname+"/"+c.line, func(t *testing.T) {
				checkCase(t, m, kname, c)
			})
		}
	}
}

func checkCase(t *testing.T, m *kernel.Model, kname string, c *vmCase) {
	if kname == "6.1" && (c.line[0] == 'f' || c.line[0] == 't') {
		t.Skip("no fprobe/tprobe events on 6.1")
	}
	res := runLine(m, c.line)
	if res.skip != "" {
		t.Skip(res.skip)
	}
	argStart := argCommandPos(res.argv, 2)
	// Errors before the arguments (place checks) or at registration
	// (unknown @SYM, instruction boundaries) belong to the event layer.
	if c.errno != "" && len(c.logs) > 0 && c.logs[0].pos < argStart {
		if res.err == nil && len(res.args) > 0 {
			if err := resolveAll(m, res.args); err != nil {
				return // registration failure reproduced
			}
		}
		t.Skipf("place or registration error: %v", c.logs)
	}
	if c.errno != "" {
		for _, l := range c.logs {
			wc, ok := messageCode(l.msg)
			if !ok || wc == grammar.ErrNone {
				t.Skipf("error table has no code for kernel message %q", l.msg)
			}
		}
		if res.err == nil {
			t.Fatalf("accepted, kernel failed with %s %v", c.errno, c.logs)
		}
		entries, errno := Logs(res.err)
		if got := errnoText[errno]; got != c.errno {
			t.Errorf("errno %q (%v), kernel %q", got, res.err, c.errno)
		}
		if len(entries) != len(c.logs) {
			t.Fatalf("%d log entries (%v), kernel %d %v", len(entries), res.err, len(c.logs), c.logs)
		}
		for i, want := range c.logs {
			wc, ok := messageCode(want.msg)
			if !ok || wc == grammar.ErrNone {
				t.Skipf("error table has no code for kernel message %q", want.msg)
			}
			got := entries[i]
			if got.Code != wc {
				t.Errorf("entry %d: %s, kernel %s", i, got.Code, wc)
			}
			if got.Off == UnpredictableOffset {
				continue
			}
			logged := res.argv
			if res.logged != nil {
				logged = res.logged
			}
			if p := got.Pos(logged); p != want.pos {
				t.Errorf("entry %d %s: caret %d (arg %d off %d), kernel %d", i, got.Code, p, got.Arg, got.Off, want.pos)
			}
		}
		return
	}
	if res.err != nil {
		t.Fatalf("rejected (%v), kernel accepted: %v", res.err, c.readback)
	}
	if err := resolveAll(m, res.args); err != nil {
		if errors.Is(err, syscall.ENOENT) && len(res.argv) > 1 && strings.HasPrefix(res.argv[1], "0x") {
			// An address probe whose @SYM does not resolve is deferred
			// by the event layer (accepted, not placed).
			t.Skipf("deferred address probe: %v", err)
		}
		t.Fatalf("symbol resolution failed: %v", err)
	}
	if len(c.readback) != 1 {
		t.Fatalf("kernel readback %v", c.readback)
	}
	rb := strings.Fields(c.readback[0])[2:]
	var got []string
	for _, a := range res.args {
		got = append(got, a.Text())
	}
	if strings.Join(got, " ") != strings.Join(rb, " ") {
		t.Errorf("readback args\n got %q\nwant %q", got, rb)
	}
	var wantFmt []string
	for _, f := range c.format {
		if isHeaderField(f) {
			continue
		}
		wantFmt = append(wantFmt, f)
	}
	if len(c.format) == 0 {
		return // the transcript has no format file for this group
	}
	gotFmt := formatLines(res.args, res.ret)
	if strings.Join(gotFmt, "\n") != strings.Join(wantFmt, "\n") {
		t.Errorf("format\n got %s\nwant %s", strings.Join(gotFmt, "\n     "), strings.Join(wantFmt, "\n     "))
	}
}

// isHeaderField reports the format lines every probe event has (common
// fields and the probe's ip or func/ret_ip).
func isHeaderField(f string) bool {
	for _, h := range []string{" common_type;", " common_flags;", " common_preempt_count;", " common_pid;", " __probe_ip;", " __probe_func;", " __probe_ret_ip;"} {
		if strings.Contains(f, "field:") && strings.Contains(f, h) {
			return true
		}
	}
	return false
}

func resolveAll(m *kernel.Model, args []*Arg) error {
	for _, a := range args {
		if err := a.ResolveSymbols(m); err != nil {
			return err
		}
	}
	return nil
}
