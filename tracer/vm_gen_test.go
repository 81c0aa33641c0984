package tracer

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/ktrace-dev/ktrace/events"
	"github.com/ktrace-dev/ktrace/grammar"
	"github.com/ktrace-dev/ktrace/internal/vmtest"
	"github.com/ktrace-dev/ktrace/kernel"
)

var (
	recDiffN    = flag.Int("recdiff", 0, "TestRecordDifferentialVM: generated definitions per kernel (0 skips)")
	recDiffSeed = flag.Uint64("recdiff.seed", 1, "TestRecordDifferentialVM: generator seed")
)

// TestRecordDifferentialVM is TestRecordVM over definitions that no one
// wrote by hand: fetch arguments composed at random (registers, stack,
// memory at several depths, BTF names and member chains, $comm,
// immediates, return values) with every type (integers of each size and
// base, bitfields, chars, strings, symbols, arrays) on the workload's
// functions. Each kernel's own tracer and ktrace record run them on the
// same hits, which must print the same bodies. A quarter are event
// probes on the tracepoints the workload hits (fields of each kind, typed
// and dereferenced, with "if" filters). It runs only with -recdiff N.
func TestRecordDifferentialVM(t *testing.T) {
	if *recDiffN == 0 {
		t.Skip("run with -recdiff N")
	}
	vmtest.ForEachKernel(t, func(t *testing.T, k vmtest.Kernel) {
		m, err := kernel.LoadSnapshot(k.Dir)
		if err != nil {
			t.Fatal(err)
		}
		major, minor, _ := m.KernelVersion()
		reg := events.NewRegistry(m, grammar.DialectFor(major, minor))
		g := &defGen{r: rand.New(rand.NewPCG(*recDiffSeed, 0x72656364))}
		var defs []traceDef
		if lines := os.Getenv("KTRACE_RECDIFF_LINES"); lines != "" {
			// Reproduce given definitions, one per line.
			for _, l := range strings.Split(strings.TrimSpace(lines), "\n") {
				defs = append(defs, traceDef{line: l, kernels: []string{k.Name}})
			}
		}
		for tries := 0; len(defs) < *recDiffN && tries < 100**recDiffN; tries++ {
			line := g.def(fmt.Sprintf("g%d", len(defs)))
			if g.r.IntN(4) == 0 {
				line = g.eprobe(fmt.Sprintf("g%d", len(defs)))
			}
			file := events.KprobeEvents
			if line[0] == 'f' || line[0] == 't' || line[0] == 'e' {
				file = events.DynamicEvents
			}
			// Only what this kernel accepts (by the emulation, which
			// the conformance suites hold to the kernel).
			if err := reg.Exec(file, line); err != nil {
				continue
			}
			defs = append(defs, traceDef{line: line, kernels: []string{k.Name}})
		}
		var list strings.Builder
		for _, d := range defs {
			list.WriteString(d.line + "\n")
		}
		t.Logf("%s: definitions (KTRACE_RECDIFF_LINES reproduces them):\n%s", k.Name, list.String())
		// The kernel's own syntax: argument names and types as this
		// kernel gives them (6.1 names "$arg3" arg4, 6.12 after BTF).
		r := runTraceBoot(t, k, defs, "--syntax", "kernel")
		// Hits pair up by an alignment of the two sequences of bodies
		// (a longest common subsequence): the clocks of the two
		// tracers drift apart under TCG, so timestamps cannot pair
		// them, and the kernel's trace names a pid by its latest comm,
		// so its lines can include what the workload's pid did before
		// exec. A definition agrees when every hit pairs but for at
		// most one on each side.
		same, hits, unpaired := 0, 0, 0
		for _, d := range defs {
			ev := d.event()
			ev = ev[strings.IndexByte(ev, '/')+1:] // trace lines name the event alone
			got, want := r.ktrace[ev], r.kernel[ev]
			if len(want) == 0 {
				if strings.Contains(d.line, " if ") && len(got) == 0 {
					// A filter that passes none of the workload's hits,
					// on both sides.
					same++
					continue
				}
				t.Errorf("%s: %s: no hits from the kernel, %d from ktrace", ev, d.line, len(got))
				continue
			}
			pairs := alignHits(got, want)
			hits += len(pairs)
			// Paired hits must agree on the (ip) part as well, but for
			// a kernel return probe that met ktrace's on the same
			// function and could not name the caller.
			for _, p := range pairs {
				g, w := got[p[0]].ip, want[p[1]].ip
				if g != w && !strings.Contains(w, "kretprobe'd") {
					t.Errorf("%s: %s: hit %d: (ip) ktrace (%s), kernel (%s)", ev, d.line, p[0], g, w)
					break
				}
			}
			extra := len(got) + len(want) - 2*len(pairs)
			unpaired += extra
			if len(got)-len(pairs) <= 1 && len(want)-len(pairs) <= 1 {
				same++
				continue
			}
			// Show the first hit of ktrace that found no partner, beside
			// the kernel's hit at the same place.
			i, j := 0, 0
			for _, p := range pairs {
				if p[0] != i || p[1] != j {
					break
				}
				i, j = i+1, j+1
			}
			g, w := "(none)", "(none)"
			if i < len(got) {
				g = got[i].body
			}
			if j < len(want) {
				w = want[j].body
			}
			t.Errorf("%s: %s: %d of %d ktrace hits and %d of %d kernel hits pair; first difference at hit %d:\n ktrace %s\n kernel %s",
				ev, d.line, len(pairs), len(got), len(pairs), len(want), i, g, w)
		}
		if unpaired > 0 {
			t.Logf("%s: %d hits seen by one tracer only", k.Name, unpaired)
		}
		t.Logf("%s: %d/%d generated definitions print the kernel's bodies and (ip) (%d hits paired)", k.Name, same, len(defs), hits)
	})
}

// alignHits pairs the hits of a and b with equal bodies, in order, as a
// longest common subsequence; it returns the index pairs.
func alignHits(a, b []hit) [][2]int {
	n, m := len(a), len(b)
	l := make([][]int, n+1)
	for i := range l {
		l[i] = make([]int, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if a[i].body == b[j].body {
				l[i][j] = l[i+1][j+1] + 1
			} else {
				l[i][j] = max(l[i+1][j], l[i][j+1])
			}
		}
	}
	var pairs [][2]int
	for i, j := 0, 0; i < n && j < m; {
		switch {
		case a[i].body == b[j].body:
			pairs = append(pairs, [2]int{i, j})
			i, j = i+1, j+1
		case l[i+1][j] >= l[i][j+1]:
			i++
		default:
			j++
		}
	}
	return pairs
}

// defGen composes event definitions on the workload's functions.
type defGen struct{ r *rand.Rand }

func (g *defGen) pick(s ...string) string { return s[g.r.IntN(len(s))] }

type wlFunc struct {
	tp     bool // a tracepoint (t events, 6.12 only)
	name   string
	btf    []string // BTF arguments and member chains that read stable values
	memory []string // fetch args that are pointers to readable memory
}

var wlFuncs = []wlFunc{
	{name: "do_sys_openat2", btf: []string{"dfd", "how->flags", "how->mode", "how->resolve"}, memory: []string{"%si", "$arg2", "%dx", "$arg3", "filename", "how"}},
	{name: "vfs_read", btf: []string{"count", "file->f_flags", "file->f_mode", "file->f_pos", "file->f_path.dentry->d_name.len"}, memory: []string{"%di", "%si", "$arg1", "$arg4", "file", "buf", "pos", "file->f_path.dentry->d_name.name"}},
	{name: "vfs_write", btf: []string{"count", "file->f_flags", "file->f_pos", "file->f_inode->i_mode"}, memory: []string{"%di", "file", "file->f_path.dentry->d_name.name"}},
	{name: "ksys_read", btf: []string{"fd", "count"}, memory: []string{"%si", "buf"}},
	{name: "ksys_write", btf: []string{"fd", "count"}, memory: []string{"%sp"}},
	{tp: true, name: "sched_process_exec", btf: []string{"old_pid", "p->pid", "p->prio", "bprm->argc", "$arg2"}, memory: []string{"p", "bprm", "$arg1", "$arg3", "bprm->filename", "p->comm"}},
	{tp: true, name: "kfree", btf: []string{"call_site", "ptr", "$arg1"}, memory: []string{"call_site", "$arg1"}},
}

var intTypes = []string{"u8", "u16", "u32", "u64", "s8", "s16", "s32", "s64", "x8", "x16", "x32", "x64"}

func (g *defGen) intType() string {
	switch g.r.IntN(8) {
	case 0:
		// A bitfield of a random width and place in a random container.
		sz := []int{8, 16, 32, 64}[g.r.IntN(4)]
		w := 1 + g.r.IntN(sz)
		off := g.r.IntN(sz - w + 1)
		return fmt.Sprintf("b%d@%d/%d", w, off, sz)
	case 1:
		return "char"
	case 2:
		return intTypes[g.r.IntN(len(intTypes))] + fmt.Sprintf("[%d]", 1+g.r.IntN(6))
	}
	return intTypes[g.r.IntN(len(intTypes))]
}

// arg returns one fetch argument for f on an entry (ret false) or return
// probe.
func (g *defGen) arg(f wlFunc, ret bool) string {
	if ret && g.r.IntN(3) == 0 {
		return "$retval:" + g.pick(append(intTypes, "symbol")...)
	}
	switch g.r.IntN(9) {
	case 0:
		return g.pick("%di", "%si", "%dx", "%cx", "%r8", "%ax", "%bx") + ":" + g.intType()
	case 1:
		if f.tp {
			// $stackN of a t event is the probe stub's stack, which a
			// raw tracepoint program cannot see (ktrace refuses it).
			return f.btf[g.r.IntN(len(f.btf))]
		}
		// Not $stack0, the return address: the two tracers' return
		// probes replace it with their trampolines in either order.
		return fmt.Sprintf("$stack%d:%s", 1+g.r.IntN(3), g.pick("x64", "u32", "symbol", "s16"))
	case 2, 3:
		mem := f.memory[g.r.IntN(len(f.memory))]
		off := g.r.IntN(24)
		if mem == "%sp" {
			// Whole words above the return address, which the two
			// tracers' return probes rewrite in either order.
			return fmt.Sprintf("+%d(%%sp):%s", 8*(1+g.r.IntN(3)), g.pick(intTypes...))
		}
		t := g.pick("string", "ustring", g.intType(), g.intType(), "symbol", "char[5]", "x8[8]")
		if g.r.IntN(4) == 0 {
			return fmt.Sprintf("+%d(+0(%s)):%s", off, mem, t)
		}
		return fmt.Sprintf("+%d(%s):%s", off, mem, t)
	case 4, 5:
		return f.btf[g.r.IntN(len(f.btf))] + ":" + g.pick(intTypes...)
	case 6:
		return g.pick("$comm", `$comm:string`, `\"lit"`, `\"with space"`, `\123`, `\-7:s8`, `\0xfff:x16`, `\-1:x64`)
	case 7:
		return f.btf[g.r.IntN(len(f.btf))]
	}
	return f.memory[g.r.IntN(len(f.memory))] + ":" + g.intType()
}

// def returns one definition named name.
func (g *defGen) def(name string) string {
	f := wlFuncs[g.r.IntN(len(wlFuncs))]
	ret := g.r.IntN(3) == 0
	var b strings.Builder
	if f.tp {
		fmt.Fprintf(&b, "t:%s %s", name, f.name)
		ret = false
	}
	switch {
	case f.tp:
	case ret && g.r.IntN(4) == 0:
		fmt.Fprintf(&b, "f:%s %s%%return", name, f.name)
	case ret:
		fmt.Fprintf(&b, "r:%s %s", name, f.name)
	case g.r.IntN(5) == 0:
		fmt.Fprintf(&b, "f:%s %s", name, f.name)
	default:
		fmt.Fprintf(&b, "p:%s %s", name, f.name)
	}
	for i, n := 0, 1+g.r.IntN(5); i < n; i++ {
		a := g.arg(f, ret)
		if g.r.IntN(2) == 0 && !strings.HasPrefix(a, "$comm") {
			a = fmt.Sprintf("a%d=%s", i, a)
		}
		b.WriteString(" " + a)
	}
	return b.String()
}

// wlEvent is a tracepoint the workload hits, with fields an event probe
// reads: numbers, and pointers or strings.
type wlEvent struct {
	name           string // SYSTEM.EVENT
	numbers, addrs []string
	strs           []string // __data_loc strings and char arrays
}

var wlEvents = []wlEvent{
	{name: "syscalls.sys_enter_openat", numbers: []string{"dfd", "flags", "mode", "__syscall_nr"}, addrs: []string{"filename"}},
	{name: "syscalls.sys_exit_openat", numbers: []string{"ret", "__syscall_nr"}},
	{name: "syscalls.sys_enter_write", numbers: []string{"fd", "count"}, addrs: []string{"buf"}},
	{name: "syscalls.sys_exit_read", numbers: []string{"ret"}},
	{name: "sched.sched_process_exec", numbers: []string{"pid", "old_pid"}, strs: []string{"filename"}},
}

// eprobe returns an event probe named ep/name on one of wlEvents.
func (g *defGen) eprobe(name string) string {
	ev := wlEvents[g.r.IntN(len(wlEvents))]
	var b strings.Builder
	fmt.Fprintf(&b, "e:ep/%s %s", name, ev.name)
	field := func(list []string) string { return "$" + list[g.r.IntN(len(list))] }
	for i, n := 0, 1+g.r.IntN(4); i < n; i++ {
		var a string
		switch k := g.r.IntN(6); {
		case k == 0 && len(ev.addrs) > 0:
			a = fmt.Sprintf("+%d(%s):%s", g.r.IntN(16), field(ev.addrs), g.pick("ustring", "u8", "x32", "char", "x8[4]"))
		case k == 1 && len(ev.strs) > 0:
			a = field(ev.strs) + g.pick(":string", "")
		case k == 2:
			// Typed as strings: as numbers the kernel prints the
			// addresses of its copies, which ktrace refuses.
			a = g.pick("$comm:string", `\"lit":string`, `\42`)
		default:
			a = field(ev.numbers)
			if g.r.IntN(2) == 0 {
				a += ":" + g.intType()
			}
		}
		if g.r.IntN(2) == 0 {
			a = fmt.Sprintf("a%d=%s", i, a)
		}
		b.WriteString(" " + a)
	}
	if g.r.IntN(3) == 0 {
		f := ev.numbers[g.r.IntN(len(ev.numbers))]
		fmt.Fprintf(&b, " if %s %s %s", f, g.pick("==", "!=", ">", "<", ">=", "&"), g.pick("0", "1", "3", "0x80", "100"))
		if g.r.IntN(2) == 0 {
			fmt.Fprintf(&b, " %s comm %s \"%s\"", g.pick("&&", "||"), g.pick("==", "!=", "~"), g.pick("workload", "work*", "ktrace"))
		}
	}
	return b.String()
}
