package conformance

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cilium/ebpf/btf"

	"github.com/ktrace-dev/ktrace/internal/vmtest"
	"github.com/ktrace-dev/ktrace/kernel"
)

var (
	diffN    = flag.Int("diff", 0, "TestDifferentialVM: number of generated lines to run on each kernel (0 skips)")
	diffSeed = flag.Uint64("diff.seed", 1, "TestDifferentialVM: generator seed")
	diffOut  = flag.String("diff.out", "", "TestDifferentialVM: write the disagreeing cases here as corpus entries")
)

// TestDifferentialVM writes lines that no one wrote by hand to each pinned
// kernel and to ktrace's emulation and reports where they disagree: lines
// composed at random from the probe grammar's parts (probe kinds, places,
// names, every fetch-argument form, types, separators). It runs only with
// -diff N; the disagreements it finds become corpus entries.
func TestDifferentialVM(t *testing.T) {
	if *diffN == 0 {
		t.Skip("run with -diff N")
	}
	kernels, runner := vmSetup(t)
	ctx := context.Background()
	var out strings.Builder
	for _, k := range kernels {
		t.Run(k.Name, func(t *testing.T) {
			m, _, err := loadModel(k)
			if err != nil {
				t.Fatal(err)
			}
			g := newLineGen(*diffSeed)
			if err := g.useKernel(m, filepath.Join(k.Dir, "kallsyms")); err != nil {
				t.Fatal(err)
			}
			var cases []Case
			seen := map[string]bool{}
			for len(cases) < *diffN {
				c := g.genCase()
				key := strings.Join(c.Setup, "\n") + "\x00" + c.File + c.Line
				if seen[key] {
					continue
				}
				seen[key] = true
				c.Corpus, c.Index = "generated", len(cases)
				cases = append(cases, c)
			}
			ctx, cancel := context.WithTimeout(ctx, 15*time.Minute)
			defer cancel()
			got, _, err := runVM(ctx, k, runner, cases, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			bad := reportEmulation(t, k, got, nil)
			for _, key := range bad {
				var i int
				fmt.Sscanf(strings.TrimPrefix(key, "generated:"), "%d", &i)
				b, _ := jsonLine(&Entry{Line: cases[i].Line, File: cases[i].File, Setup: cases[i].Setup, Kernels: []string{k.Name}, Note: "generated"})
				out.Write(b)
			}
		})
	}
	if *diffOut != "" {
		if err := os.WriteFile(*diffOut, []byte(out.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// vmSetup skips unless the VM tests can run and returns the pinned
// kernels and the guest runner, for the differential tests.
func vmSetup(t *testing.T) ([]vmtest.Kernel, []byte) {
	t.Helper()
	vmtest.Require(t)
	kernels, err := vmtest.PinnedKernels()
	if err != nil {
		t.Fatal(err)
	}
	runner, err := vmtest.BuildStatic(context.Background(), runnerPkg)
	if err != nil {
		t.Fatal(err)
	}
	return kernels, runner
}

// lineGen composes probe-definition lines from the grammar's parts. The
// parts are the forms the kernel's parsers branch on, valid and invalid,
// so that random combinations reach the interactions between them (error
// precedence, carets after rewriting, types on each fetch kind).
type lineGen struct {
	r *rand.Rand
	m *kernel.Model
	// text is the kernel's function symbols (kallsyms t/T), for places
	// beyond the fixed list.
	text  []string
	addrs []uint64 // their addresses (the VM boots with nokaslr)
	tps   []string // tracepoint names (kallsyms __tracepoint_NAME)
}

// useKernel lets the generator pick any function of the kernel (kallsyms
// at path) and type BTF arguments from m.
func (g *lineGen) useKernel(m *kernel.Model, path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	g.m = m
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) >= 3 && strings.HasPrefix(f[2], "__tracepoint_") && len(f) == 3 {
			g.tps = append(g.tps, strings.TrimPrefix(f[2], "__tracepoint_"))
		}
		if len(f) == 3 && (f[1] == "t" || f[1] == "T") {
			a, err := strconv.ParseUint(f[0], 16, 64)
			if err != nil {
				continue
			}
			g.text = append(g.text, f[2])
			g.addrs = append(g.addrs, a)
		}
	}
	return nil
}

// kernelFunc is a random function of the kernel with its BTF parameter
// names and, for parameters that point to a struct, member chains.
func (g *lineGen) kernelFunc() (name string, params, fields []string) {
	name = g.text[g.r.IntN(len(g.text))]
	_, proto, err := g.m.FuncProto(name)
	if err != nil || proto == nil {
		return name, nil, nil
	}
	for _, p := range proto.Params {
		params = append(params, p.Name)
		ptr, ok := btf.UnderlyingType(p.Type).(*btf.Pointer)
		if !ok {
			continue
		}
		var members []btf.Member
		switch st := btf.UnderlyingType(ptr.Target).(type) {
		case *btf.Struct:
			members = st.Members
		case *btf.Union:
			members = st.Members
		}
		for _, mb := range members {
			if mb.Name != "" && len(fields) < 40 {
				fields = append(fields, p.Name+"->"+mb.Name)
			}
		}
	}
	return name, params, fields
}

// tracepoint is a random tracepoint with the parameters its probe stub
// gives t events (the stub's first, hidden one dropped).
func (g *lineGen) tracepoint() genFunc {
	name := g.tps[g.r.IntN(len(g.tps))]
	f := genFunc{name: name}
	if _, proto, err := g.m.FuncProto("__probestub_" + name); err == nil && proto != nil && len(proto.Params) > 1 {
		for _, p := range proto.Params[1:] {
			f.params = append(f.params, p.Name)
		}
	}
	return f
}

// wrap sometimes turns a line into what a script writes around it:
// several lines in one write, comments, blank lines, surrounding blanks.
func (g *lineGen) wrap(line, file string) string {
	switch g.r.IntN(40) {
	case 0:
		other, _ := g.line()
		return line + "\n" + other
	case 1:
		other, _ := g.line()
		return other + "\n" + line
	case 2:
		return line + " # " + g.pick("comment", "x=1", "")
	case 3:
		return g.pick(" ", "\t", "  ") + line
	case 4:
		return line + g.pick(" ", "\t", "\n", "\n\n")
	case 5:
		return "#" + line + "\n" + line
	}
	return line
}

// genCase returns a case: most are one line on a fresh tracefs; some first
// define events (setup) that the line appends to, clashes with or removes.
func (g *lineGen) genCase() Case {
	if g.chance(0.2) {
		return g.filterCase()
	}
	line, file := g.line()
	line = g.wrap(line, file)
	c := Case{Line: line, File: file, Setup: []string{}}
	if !g.chance(0.15) {
		return c
	}
	for i, n := 0, 1+g.r.IntN(2); i < n; i++ {
		s, sf := g.line()
		if sf != file {
			s = sf + ":" + s
		}
		c.Setup = append(c.Setup, s)
	}
	if g.chance(0.3) {
		// Removal of what the setup defined, by name, place or args.
		head, rest, _ := strings.Cut(c.Setup[0], " ")
		if _, name, ok := strings.Cut(head, ":"); ok && !strings.Contains(name, "_events:") {
			c.Line = "-:" + name
			if g.chance(0.5) {
				c.Line += " " + rest
			}
			c.File = g.pick(KprobeEvents, DynamicEvents)
		}
	}
	return c
}

// synthLine is a synthetic event definition (or removal), for
// synthetic_events or as an "s:" line of dynamic_events: random field
// types, array suffixes on the name or the type, ';' or legacy blanks
// between fields, and the usual mistakes.
func (g *lineGen) synthLine() (string, string) {
	name := g.pick("lat", "wakeup_lat", "x", "Lat_2", "1bad", "a-b", "l"+strings.Repeat("x", 70))
	if g.chance(0.1) {
		return "!" + g.pick(name, "lat", "nosuch"), SyntheticEvents
	}
	var b strings.Builder
	file := SyntheticEvents
	if g.chance(0.4) {
		file = DynamicEvents
		b.WriteString(g.pick("s:", "s:", "s:synthetic/", "s:other/", "s"))
	}
	b.WriteString(name)
	types := []string{"u64", "s64", "u32", "s32", "u16", "s16", "u8", "s8", "char", "int", "long", "bool",
		"pid_t", "gfp_t", "unsigned int", "unsigned char", "unsigned long", "unsigned", "unsigned short",
		"char[16]", "char[]", "long[]", "unsigned long[]", "u32[4]", "foo", "char[0x10]", "char[257]"}
	for i, n := 0, g.r.IntN(5); i <= n; i++ {
		switch {
		case i == 0:
			b.WriteString(g.pick(" ", "\t", "  "))
		case g.chance(0.8):
			b.WriteString(g.pick("; ", ";", " ;", ";; "))
		default:
			b.WriteString(" ")
		}
		t := types[g.r.IntN(len(types))]
		f := g.pick("delta", "pid", "comm", "s", "common_pid", "1f", "f-x", "a/b")
		if g.chance(0.15) {
			f += g.pick("[16]", "[]", "[0]", "[010]", "[256]", "[257]", "[16]x", "[16")
		}
		if g.chance(0.05) {
			f = ""
		}
		b.WriteString(t)
		if f != "" {
			b.WriteString(" " + f)
		}
	}
	if g.chance(0.05) {
		b.WriteString(";")
	}
	return b.String(), file
}

func newLineGen(seed uint64) *lineGen { return &lineGen{r: rand.New(rand.NewPCG(seed, 0x6b747261))} }

func (g *lineGen) pick(s ...string) string { return s[g.r.IntN(len(s))] }
func (g *lineGen) chance(p float64) bool   { return g.r.Float64() < p }

// funcs are functions with BTF prototypes on both kernels, with their
// parameter names, so that BTF arguments are sometimes valid.
type genFunc struct {
	name           string
	params, fields []string
}

var genFuncs = []genFunc{
	{name: "vfs_read", params: []string{"file", "buf", "count", "pos"}},
	{name: "vfs_write", params: []string{"file", "buf", "count", "pos"}},
	{name: "do_sys_openat2", params: []string{"dfd", "filename", "how"}},
	{name: "do_filp_open", params: []string{"dfd", "pathname", "op"}},
	{name: "security_file_open", params: []string{"file"}},
	{name: "kernel_clone", params: []string{"args"}},
	{name: "dput", params: []string{"dentry"}},
	{name: "tcp_sendmsg", params: []string{"sk", "msg", "size"}},
	{name: "kfree", params: []string{"objp"}},
	{name: "vfs_fsync_range", params: []string{"file", "start", "end", "datasync"}},
	{name: "schedule_timeout", params: []string{"timeout"}},
	{name: "do_exit", params: []string{"code"}},
}

var genFields = []string{
	"file->f_flags", "file->f_mode", "file->f_path.dentry", "file->f_path.dentry->d_name.name",
	"file->f_inode->i_ino", "file->f_pos", "file->nosuch", "file->f_path", "file.f_flags",
	"how->flags", "how->mode", "dentry->d_name.name", "dentry->d_inode", "dentry->d_parent->d_name.name",
	"args->flags", "args->exit_signal", "sk->sk_family", "sk->__sk_common.skc_family", "msg->msg_flags",
	"op->open_flag", "pathname->name", "filename->name", "buf->x", "count->x",
}

func (g *lineGen) name(def string) string {
	switch g.r.IntN(12) {
	case 0:
		return g.pick("a", "x1", "_u", "arg1", "common_pid", "1bad", "a-b", "a.b", "ev", "n"+strings.Repeat("x", 60))
	}
	return def
}

// atom is a fetch argument without a type.
func (g *lineGen) atom(f genFunc, depth int) string {
	switch g.r.IntN(14) {
	case 0:
		return g.pick("%ax", "%di", "%si", "%dx", "%cx", "%r8", "%r9", "%sp", "%ip", "%flags", "%bp", "%bx", "%r15", "%orig_ax", "%cs", "%zz", "%", "%AX", "%eax")
	case 1:
		return g.pick("$stack", "$stack0", "$stack1", "$stack3", "$stack99", "$stack1x", "$stacks", "$stack-1")
	case 2:
		return g.pick("$arg1", "$arg2", "$arg3", "$arg4", "$arg6", "$arg7", "$arg0", "$arg", "$arg*", "$args", "$arg01", "$arg1x")
	case 3:
		return g.pick("$retval", "$retval", "$comm", "$COMM", "$current", "$retvalx", "$", "$foo")
	case 4:
		return g.pick("@jiffies", "@jiffies+8", "@jiffies-8", "@nosuchsym", "@0xffffffff82000000", "@0", "@", "@jiffies+0x10", "@vfs_read", "@jiffies+", "@+8")
	case 5:
		return g.pick(`\1`, `\0x10`, `\-1`, `\123abc`, `\`, `\"hello"`, `\"a b"`, `\"`, `\"unterminated`, `\0x`, `\-0x10`)
	case 6, 7:
		if len(f.params) > 0 {
			return f.params[g.r.IntN(len(f.params))]
		}
		return "nosuchparam"
	case 8:
		if len(f.fields) > 0 && g.chance(0.7) {
			return f.fields[g.r.IntN(len(f.fields))]
		}
		return g.pick(genFields...)
	case 9, 10:
		if depth > 2 && (depth > 6 || g.chance(0.7)) {
			return "%di"
		}
		off := g.pick("+0", "+8", "-8", "+0x10", "0", "+u0", "+u8", "-u8", "+", "+x", "8", "+0x", "+4096")
		inner := g.atom(f, depth+1)
		if g.chance(0.05) {
			return off + "(" + inner
		}
		return off + "(" + inner + ")"
	case 11:
		return g.pick("nosuch", "dfd", "file", "a->b", "file-", "file->", "->f", "file..x", "file->f_path.", "$arg1->f_flags", "$arg1.x")
	case 12:
		return g.pick("$retval->x", "$retval.x", "$comm->x", "+0($comm)", "+0($retval)", "+0(@jiffies)", "+0($stack)", "+8(%sp)")
	}
	return "%di"
}

func (g *lineGen) typ() string {
	if !g.chance(0.5) {
		return ""
	}
	t := g.pick("u8", "u16", "u32", "u64", "s8", "s16", "s32", "s64", "x8", "x16", "x32", "x64",
		"string", "ustring", "symbol", "symstr", "char", "%pd", "%pD", "u128", "x", "", "string",
		"b4@2/32", "b1@0/8", "b8@0/8", "b0@0/8", "b9@0/8", "b4@30/32", "b4@2/64", "b4@2", "b@2/32", "b4@x/32",
		"u32[4]", "x8[64]", "x8[65]", "u8[0]", "string[2]", "u32[", "u32[x]", "s8[1]x", "symbol[2]", "char[8]", "ustring[3]")
	return ":" + t
}

func (g *lineGen) arg(f genFunc, i int) string {
	a := g.atom(f, 0) + g.typ()
	if g.chance(0.3) {
		a = g.name(fmt.Sprintf("n%d", i)) + "=" + a
	} else if g.chance(0.03) {
		a = "=" + a
	}
	return a
}

func (g *lineGen) place(fn genFunc) string {
	f := fn.name
	switch g.r.IntN(10) {
	case 0:
		return f + g.pick("+0", "+4", "+5", "+1", "+0x10", "+8", "+x", "+", "+-4")
	case 2, 3:
		return fmt.Sprintf("%s+%d", f, g.r.IntN(80))
	case 4:
		if len(g.addrs) > 0 {
			// A raw address in or just past a random function.
			return fmt.Sprintf("0x%x", g.addrs[g.r.IntN(len(g.addrs))]+uint64(g.r.IntN(40)))
		}
	case 1:
		return g.pick("nosuchfunc", "jiffies", "vmlinux:"+f, "nosuchmod:"+f, "0x0", "0xffffffff81000000", f+"%return", f+"%ret", f+"%returnx", "_text", "__schedule")
	}
	return f
}

// head is a probe command's "[:[GRP/]EVENT]" part, often absent.
func (g *lineGen) head(def string) string {
	switch g.r.IntN(6) {
	case 1:
		return ":" + g.name(def)
	case 2:
		return ":" + g.name("grp") + "/" + g.name(def)
	case 3:
		return ":ev"
	}
	return ""
}

// uprobeLine is a uprobe definition: a file (a real binary, a directory,
// a device, a missing path), an offset with or without a reference
// counter and %return, and the fetch arguments uprobes have, with types.
func (g *lineGen) uprobeLine() (string, string) {
	var b strings.Builder
	b.WriteString(g.pick("p", "p", "r", "r", "r5", "x"))
	b.WriteString(g.head("uev"))
	b.WriteString(" " + g.pick("/bin/busybox", "/bin/busybox", "/bin/busybox", "/bin", "/dev/null", "/nosuch", "bin/busybox", "/bin/busybox/x"))
	b.WriteString(":" + g.pick("0x10", "0x1000", "0x4d2", "16", "0", "0x", "-1", "x", "0x1000(0x20)", "0x1000(0x)", "0x1000(", "0x1000%return", "0x1000(0x20)%return", "0x1000%ret"))
	for i, n := 0, g.r.IntN(5); i < n; i++ {
		b.WriteString(g.pick(" ", " ", "\t"))
		a := g.pick("%ax", "%di", "%sp", "%ip", "%zz", "$stack", "$stack0", "$stack2", "$retval", "$comm", "$arg1", "@+0", "@+0x10", "@+-8", "@0x1000", "@jiffies",
			"+0(%sp)", "+8(%di)", "+0(%si)", "+u0(%di)", "+0(@+0x10)", `\1`, `\-8`, `\"str"`, "$current")
		a += g.typ()
		if g.chance(0.3) {
			a = g.name(fmt.Sprintf("u%d", i)) + "=" + a
		}
		b.WriteString(a)
	}
	return b.String(), g.pick(UprobeEvents, UprobeEvents, DynamicEvents, KprobeEvents)
}

// eprobeLine is an event probe definition on a random tracepoint of the
// model (or a bad target): its fields, dereferenced and typed, $comm, an
// unknown field, and sometimes an "if" filter on the fields.
func (g *lineGen) eprobeLine() (string, string) {
	sys, name, fields := "sched", "sched_switch", []string{"prev_comm", "prev_pid", "prev_state", "next_comm"}
	if g.m != nil && g.chance(0.7) {
		if tps, _, err := g.m.Tracepoints(); err == nil && len(tps) > 0 {
			tp := tps[g.r.IntN(len(tps))]
			sys, name, fields = tp.System, tp.Name, nil
			for _, f := range tp.Fields() {
				if !f.Common {
					fields = append(fields, f.Name)
				}
			}
		}
	}
	sep := g.pick(".", ".", "/", ":", "")
	if g.chance(0.05) {
		name = g.pick("nosuch", "", "sched_switch")
	}
	var b strings.Builder
	b.WriteString("e" + g.head("eev") + " " + sys + sep + name)
	field := func() string {
		if len(fields) == 0 || g.chance(0.1) {
			return g.pick("nosuch", "common_pid", "comm", "COMM")
		}
		return fields[g.r.IntN(len(fields))]
	}
	for i, n := 0, g.r.IntN(4); i < n; i++ {
		a := "$" + field()
		if g.chance(0.2) {
			a = g.pick("+0(", "+8(", "+u0(") + a + ")"
		}
		a += g.typ()
		if g.chance(0.3) {
			a = g.name(fmt.Sprintf("e%d", i)) + "=" + a
		}
		b.WriteString(" " + a)
	}
	if g.chance(0.4) {
		b.WriteString(" if " + field() + " " + g.pick("==", "!=", ">", "<=", "&", "~", "=") + " " + g.pick("0", "1", "-1", "0x10", `"a*"`, `"x"`, "", "abc"))
		if g.chance(0.3) {
			b.WriteString(g.pick(" && ", " || ", " ") + field() + g.pick(" == 0", " != 1", ""))
		}
	}
	return b.String(), g.pick(DynamicEvents, DynamicEvents, DynamicEvents, KprobeEvents, UprobeEvents)
}

// line returns one line and the control file it is written to.
func (g *lineGen) line() (string, string) {
	switch x := g.r.Float64(); {
	case x < 0.12:
		return g.synthLine()
	case x < 0.22:
		return g.uprobeLine()
	case x < 0.32:
		return g.eprobeLine()
	}
	fn := genFuncs[g.r.IntN(len(genFuncs))]
	if g.m != nil && g.chance(0.4) {
		fn.name, fn.params, fn.fields = g.kernelFunc()
	}
	var b strings.Builder
	file := KprobeEvents
	kind := g.r.IntN(10)
	switch {
	case kind < 5:
		b.WriteString("p")
	case kind < 8:
		b.WriteString(g.pick("r", "r", "r10", "r0", "r5000", "rx"))
	default:
		k := g.pick("f", "f", "f1", "t", "t")
		b.WriteString(k)
		file = DynamicEvents
		if k == "t" && len(g.tps) > 0 && g.chance(0.8) {
			fn = g.tracepoint()
		}
	}
	if g.chance(0.1) {
		file = g.pick(KprobeEvents, DynamicEvents)
	}
	switch g.r.IntN(6) {
	case 0, 5:
	case 1:
		b.WriteString(":" + g.name("myev"))
	case 2:
		b.WriteString(":" + g.name("grp") + "/" + g.name("myev"))
	default:
		b.WriteString(":ev")
	}
	b.WriteString(" " + g.place(fn))
	for i, n := 0, g.r.IntN(6); i < n; i++ {
		b.WriteString(g.pick(" ", " ", " ", "\t", "  "))
		b.WriteString(g.arg(fn, i))
	}
	return b.String(), file
}
