package conformance

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/ktrace-dev/ktrace/internal/vmtest"
)

var (
	scriptDiffN    = flag.Int("scriptdiff", 0, "TestScriptDifferentialVM: generated tracefs scripts per kernel (0 skips)")
	scriptDiffSeed = flag.Uint64("scriptdiff.seed", 1, "TestScriptDifferentialVM: generator seed")
)

// TestScriptDifferentialVM runs tracefs sessions that no one wrote by hand
// on each kernel's tracefs and on `ktrace sh`, and compares their output
// line by line: random sequences of definitions, appends, removals,
// truncations, enables and disables, filters, and reads of the control
// files, error_log and the events/ tree, each with its exit status. It
// checks the registry's state machine (IDs, EBUSY, readback order, the
// group enable files' mixed state, error_log's last eight entries) where
// the corpus checks single writes. It runs only with -scriptdiff N.
func TestScriptDifferentialVM(t *testing.T) {
	if *scriptDiffN == 0 {
		t.Skip("run with -scriptdiff N")
	}
	kernels, runner := vmSetup(t)
	ctx := context.Background()
	kt, err := vmtest.BuildStatic(ctx, "./cmd/ktrace")
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "ktrace")
	if err := os.WriteFile(bin, kt, 0o755); err != nil {
		t.Fatal(err)
	}
	g := &scriptGen{r: rand.New(rand.NewPCG(*scriptDiffSeed, 0x73637269))}
	scripts := map[string][]byte{}
	var names []string
	for i := 0; i < *scriptDiffN; i++ {
		name := fmt.Sprintf("gen%03d.sh", i)
		names = append(names, name)
		scripts[ScriptDir+"/"+name] = []byte(g.script())
	}
	sort.Strings(names)
	dir := t.TempDir()
	if d := os.Getenv("KTRACE_SCRIPTDIFF_DIR"); d != "" {
		// Keep the scripts for reproducing a difference by hand.
		dir = d
	}
	for p, b := range scripts {
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(p)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, k := range kernels {
		t.Run(k.Name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
			defer cancel()
			_, out, err := runVM(ctx, k, runner, nil, scripts, nil)
			if err != nil {
				t.Fatal(err)
			}
			res, err := ParseScriptResults(out)
			if err != nil {
				t.Fatal(err)
			}
			// One ktrace sh session runs the scripts one after the other
			// as the guest's runner does in one boot, so that state the
			// kernel keeps across them (6.1's event ID counter) carries
			// over the same way; each script runs in a subshell.
			all := filepath.Join(t.TempDir(), "all.sh")
			runAll := strings.Replace(ScriptRunner, ScriptDir+"/*.sh", dir+"/*.sh", 1)
			runAll = strings.ReplaceAll(runAll, `sh "$t"`, `( . "$t" )`)
			if err := os.WriteFile(all, []byte(runAll), 0o644); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(bin, "--kernel", k.Dir, "sh", all)
			out2, err := cmd.Output()
			var ee *exec.ExitError
			if err != nil && !errors.As(err, &ee) {
				t.Fatalf("ktrace sh: %v", err)
			}
			mine, err := ParseScriptResults(string(out2))
			if err != nil {
				t.Fatal(err)
			}
			same := 0
			for _, n := range names {
				got := mine[n].Output
				want := normScript(res[n].Output)
				if g := normScript(got); g != want {
					t.Errorf("%s on %s:\n%s", n, k.Name, firstDiff(want, g, string(scripts[ScriptDir+"/"+n])))
					continue
				}
				same++
			}
			t.Logf("%s: %d/%d generated tracefs scripts print the same on ktrace sh and the kernel's tracefs", k.Name, same, len(names))
		})
	}
}

// errlogStamp is error_log's "[ seconds.micros] " prefix, which differs
// between any two runs.
var errlogStamp = regexp.MustCompile(`(?m)^\[ *\d+\.\d+\] `)

// shellPrefix is how a shell names itself in its error messages: "sh: "
// interactively, "SCRIPT: line N: " in a script (busybox).
var shellPrefix = regexp.MustCompile(`(?m)^(?:\S+: line \d+: |sh: )`)

func normScript(s string) string {
	return shellPrefix.ReplaceAllString(errlogStamp.ReplaceAllString(s, "[T] "), "sh: ")
}

// firstDiff shows where two outputs part, with the op that printed it.
func firstDiff(want, got, script string) string {
	wl, gl := strings.Split(want, "\n"), strings.Split(got, "\n")
	i := 0
	for i < len(wl) && i < len(gl) && wl[i] == gl[i] {
		i++
	}
	op := ""
	for j := i; j >= 0; j-- {
		if j < len(wl) && strings.HasPrefix(wl[j], "## ") {
			op = wl[j]
			break
		}
	}
	line := func(l []string) string {
		if i < len(l) {
			return l[i]
		}
		return "(end)"
	}
	n := strings.TrimPrefix(op, "## ")
	cmd := ""
	for _, l := range strings.Split(script, "\n") {
		if strings.HasPrefix(l, "echo '## "+n+"'") {
			cmd = l
		}
	}
	return fmt.Sprintf("  at %s (%s)\n  linux: %q\n  ktrace: %q", op, cmd, line(wl), line(gl))
}

// scriptGen composes tracefs sessions over a few event names, so that the
// operations meet: appends to and removals of the same events, enables of
// what exists and what does not.
type scriptGen struct {
	r  *rand.Rand
	op int
}

func (g *scriptGen) pick(s ...string) string { return s[g.r.IntN(len(s))] }

var (
	sgNames  = []string{"a", "b", "c", "grp/d", "grp/a"}
	sgFuncs  = []string{"vfs_read", "vfs_write", "do_sys_openat2", "ksys_read", "nosuchfunc"}
	sgArgs   = []string{"", "", "%di", "x=%si:u32", "%di %si", "s=+0(%si):string", "$arg1", "$comm", "x=%ax:x8 y=%dx", "%zz", "x=%di x=%si", "$stack1:u16", "$arg*", "file", "count:x32", "$retval", "b=%di:b4@2/32", "a=+0(%di):u8[4]"}
	sgFilter = []string{"common_pid != 0", "x == 1", "arg1 > 0 && arg1 < 10", "bad ==", "0"}
)

func (g *scriptGen) def() (file, line string) {
	name := sgNames[g.r.IntN(len(sgNames))]
	fn := sgFuncs[g.r.IntN(len(sgFuncs))]
	args := sgArgs[g.r.IntN(len(sgArgs))]
	switch g.r.IntN(10) {
	case 0:
		line = fmt.Sprintf("%s:%s %s %s", g.pick("r", "r4", "r100000"), name, fn, strings.Replace(args, "%si", "$retval", 1))
	case 8:
		return "dynamic_events", strings.TrimSpace(fmt.Sprintf("f:%s %s%%return %s", name, fn, args))
	case 9:
		// Several lines in one write, a comment, leading blanks.
		a, b := fmt.Sprintf("p:%s %s %s", name, fn, args), fmt.Sprintf("p:%s %s", sgNames[g.r.IntN(len(sgNames))], sgFuncs[g.r.IntN(len(sgFuncs))])
		line = g.pick(a+`\n`+b, "# "+a, "  "+a, a+" # note")
	case 1:
		return "dynamic_events", strings.TrimSpace(fmt.Sprintf("f:%s %s %s", name, fn, args))
	case 2:
		line = fmt.Sprintf("p %s %s", fn, args)
	default:
		line = fmt.Sprintf("p:%s %s %s", name, fn, args)
	}
	return g.pick("kprobe_events", "kprobe_events", "dynamic_events"), strings.TrimSpace(line)
}

// eventDir is the events/ directory of a name in sgNames (kprobes group
// unless the name has one).
func eventDir(name string) string {
	if strings.Contains(name, "/") {
		return "events/" + name
	}
	return "events/kprobes/" + name
}

func (g *scriptGen) step() string {
	var cmd string
	name := sgNames[g.r.IntN(len(sgNames))]
	switch g.r.IntN(21) {
	case 16:
		cmd = fmt.Sprintf("echo %s/*", eventDir(name))
	case 17:
		cmd = "wc -l < kprobe_profile"
	case 18:
		cmd = "echo > error_log; wc -l < error_log"
	case 19:
		f, l := g.def()
		cmd = fmt.Sprintf("printf '%s\\n' > %s 2>&1; echo rc=$?", strings.ReplaceAll(l, "%", "%%"), f)
	case 20:
		cmd = fmt.Sprintf("cat %s/trigger 2>&1; echo rc=$?", eventDir(name))

	case 0, 1, 2, 3:
		f, l := g.def()
		// printf: one write(2), and \n in l makes a multi-line write.
		cmd = fmt.Sprintf("printf '%s\\n' >> %s 2>&1; echo rc=$?", strings.ReplaceAll(l, "%", "%%"), f)
	case 4:
		cmd = fmt.Sprintf("echo '-:%s' >> %s 2>&1; echo rc=$?", name, g.pick("kprobe_events", "dynamic_events"))
	case 5:
		cmd = fmt.Sprintf("echo > %s 2>&1; echo rc=$?", g.pick("kprobe_events", "dynamic_events"))
	case 6, 7:
		cmd = fmt.Sprintf("echo %s > %s/enable 2>&1; echo rc=$?", g.pick("0", "1", "1"), eventDir(name))
	case 8:
		cmd = fmt.Sprintf("echo %s > events/%s/enable 2>&1; echo rc=$?", g.pick("0", "1"), g.pick("kprobes", "grp", "fprobes"))
	case 9:
		cmd = fmt.Sprintf("cat events/%s/enable 2>&1; echo rc=$?", g.pick("kprobes", "grp"))
	case 10:
		cmd = fmt.Sprintf("cat %s 2>&1", g.pick("kprobe_events", "dynamic_events", "error_log"))
	case 11:
		cmd = fmt.Sprintf("cat %s/%s 2>&1; echo rc=$?", eventDir(name), g.pick("format", "id", "enable", "filter"))
	case 12:
		cmd = fmt.Sprintf("echo '%s' > %s/filter 2>&1; echo rc=$?; cat %s/filter 2>&1", g.pick(sgFilter...), eventDir(name), eventDir(name))
	case 13:
		cmd = "echo events/kprobes/* events/grp/* events/fprobes/*"
	case 14:
		cmd = "cat error_log"
	default:
		cmd = fmt.Sprintf("wc -l < %s", g.pick("kprobe_events", "dynamic_events", "error_log"))
	}
	g.op++
	// In a subshell with its stderr on stdout, so that a failed
	// redirection's message lands in the output in order.
	return fmt.Sprintf("echo '## %d'\n( %s ) 2>&1\n", g.op, cmd)
}

func (g *scriptGen) script() string {
	var b strings.Builder
	for i, n := 0, 8+g.r.IntN(12); i < n; i++ {
		b.WriteString(g.step())
	}
	b.WriteString("( echo 0 > events/kprobes/enable; echo 0 > events/grp/enable; echo 0 > events/fprobes/enable ) 2>/dev/null\n")
	return b.String()
}
