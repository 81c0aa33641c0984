package events

import (
	"errors"
	"strings"
	"syscall"
	"testing"

	"github.com/ktrace-dev/ktrace/grammar"
	"github.com/ktrace-dev/ktrace/internal/vmtest"
)

func newRegistry(t testing.TB, release string) *Registry {
	m := vmtest.Model(t, release)
	major, minor, _ := m.KernelVersion()
	return NewRegistry(m, grammar.DialectFor(major, minor))
}

// lineCase is one command written to a fresh registry after its setup
// lines, with what the pinned kernel answered (booted with tools/vmsh).
type lineCase struct {
	kernels  string // "6.1", "6.12" or "" for both
	file     File
	setup    []string // lines run first, on the same file ("D:" prefix: dynamic_events)
	line     string
	errno    syscall.Errno
	code     grammar.Code // logged code; ErrNone: nothing logged
	subsys   string       // "" = trace_kprobe
	pos      int
	readback []string // the file's lines after the write (nil: not checked)
}

func runCases(t *testing.T, cases []lineCase) {
	t.Helper()
	for _, rel := range []string{"6.1", "6.12"} {
		for _, tc := range cases {
			if tc.kernels != "" && tc.kernels != rel {
				continue
			}
			t.Run(rel+"/"+tc.line, func(t *testing.T) {
				r := newRegistry(t, rel)
				for _, s := range tc.setup {
					f := tc.file
					if rest, ok := strings.CutPrefix(s, "D:"); ok {
						f, s = DynamicEvents, rest
					}
					if err := r.Exec(f, s); err != nil {
						t.Fatalf("setup %q: %v", s, err)
					}
				}
				_, err := r.Write(tc.file, []byte(tc.line+"\n"))
				checkErr(t, r, err, tc)
				if tc.readback != nil {
					got := r.Readback(tc.file)
					want := strings.Join(tc.readback, "\n")
					if want != "" {
						want += "\n"
					}
					if got != want {
						t.Errorf("readback:\n%s\nwant:\n%s", got, want)
					}
				}
			})
		}
	}
}

func checkErr(t *testing.T, r *Registry, err error, tc lineCase) {
	t.Helper()
	if tc.errno == 0 {
		if err != nil {
			t.Fatalf("error %v, want success", err)
		}
		return
	}
	var we *WriteError
	if !errors.As(err, &we) {
		t.Fatalf("error %v, want WriteError %v", err, tc.errno)
	}
	if we.Errno != tc.errno {
		t.Errorf("errno %v, want %v", we.Errno, tc.errno)
	}
	if !errors.Is(err, tc.errno) {
		t.Errorf("errors.Is(%v) false", tc.errno)
	}
	if tc.code == grammar.ErrNone {
		if we.Last() != nil {
			t.Errorf("logged %+v, want nothing", *we.Last())
		}
		return
	}
	if we.Last() == nil {
		t.Fatalf("nothing logged, want %v", tc.code)
	}
	subsys := tc.subsys
	if subsys == "" {
		subsys = "trace_kprobe"
	}
	want := LogEntry{Subsys: subsys, Msg: r.dialect.Message(tc.code), Cmd: grammar.Command(grammar.Split(tc.line)), Pos: tc.pos}
	if *we.Last() != want {
		t.Errorf("log %+v, want %+v", *we.Last(), want)
	}
}

const (
	einval = syscall.EINVAL
	eexist = syscall.EEXIST
	enoent = syscall.ENOENT
)

// Head, maxactive, place and name handling of kprobe lines.
func TestKprobeLines(t *testing.T) {
	long := strings.Repeat("abcdefghijklmnopqrstuvwxyz", 3)
	runCases(t, []lineCase{
		{line: "p vfs_read", readback: []string{"p:kprobes/p_vfs_read_0 vfs_read"}},
		{line: "r vfs_read", readback: []string{"r10:kprobes/r_vfs_read_0 vfs_read"}},
		{line: "r5 vfs_read", readback: []string{"r5:kprobes/r_vfs_read_0 vfs_read"}},
		{line: "r010 vfs_read", readback: []string{"r8:kprobes/r_vfs_read_0 vfs_read"}},
		{line: "r0x10 vfs_read", readback: []string{"r16:kprobes/r_vfs_read_0 vfs_read"}},
		{line: "r4096 vfs_read", readback: []string{"r4096:kprobes/r_vfs_read_0 vfs_read"}},
		{line: "r1:ev vfs_read", readback: []string{"r1:kprobes/ev vfs_read"}},
		{line: "r0 vfs_read", errno: einval, code: grammar.ErrBadMaxact, pos: 1, readback: []string{}},
		{line: "r4097 vfs_read", errno: einval, code: grammar.ErrMaxactTooBig, pos: 1},
		{line: "r1x vfs_read", errno: einval, code: grammar.ErrBadMaxact, pos: 1},
		{line: "r1x:ev vfs_read", errno: einval, code: grammar.ErrBadMaxact, pos: 1},
		{line: "p1 vfs_read", errno: einval, code: grammar.ErrBadMaxactType, pos: 1},
		{line: "p1:ev nosuchsym", errno: einval, code: grammar.ErrBadMaxactType, pos: 1},
		{line: "pxyz:ev vfs_read", readback: []string{"p:kprobes/ev vfs_read"}},
		{line: "pa1:ev vfs_read", readback: []string{"p:kprobes/ev vfs_read"}},
		{line: "rxyz vfs_read", readback: []string{"r10:kprobes/r_vfs_read_0 vfs_read"}},
		{line: "p vfs_read+-1", errno: einval, code: grammar.ErrBadProbeAddr, pos: 2},
		{line: "p vfs_read-1", errno: einval, code: grammar.ErrBadProbeAddr, pos: 2},
		{line: "p vfs_read+0x100000000", errno: einval, code: grammar.ErrBadProbeAddr, pos: 2},
		{line: "p vfs_read+abc", errno: einval, code: grammar.ErrBadProbeAddr, pos: 2},
		{line: "p vfs_read+", errno: einval, code: grammar.ErrBadProbeAddr, pos: 2},
		{line: "p -1", errno: einval, code: grammar.ErrBadProbeAddr, pos: 2},
		{line: "p vfs_read%return", readback: []string{"r10:kprobes/r_vfs_read_0 vfs_read"}},
		{line: "p vfs_read+0%return", readback: []string{"r10:kprobes/r_vfs_read_0 vfs_read"}},
		{line: "r vfs_read%return", readback: []string{"r10:kprobes/r_vfs_read_0 vfs_read"}},
		{line: "r vfs_read+0", readback: []string{"r10:kprobes/r_vfs_read_0 vfs_read"}},
		{line: "p vfs_read%ret", errno: einval, code: grammar.ErrBadAddrSuffix, pos: 10},
		{line: "p vfs_read%returnx", errno: einval, code: grammar.ErrBadAddrSuffix, pos: 10},
		{line: "p vfs_read%return+4", errno: einval, code: grammar.ErrBadAddrSuffix, pos: 10},
		{kernels: "6.12", line: "p vfs_read+4%return", readback: []string{"r10:kprobes/r_vfs_read_4 vfs_read+4"}},
		{kernels: "6.12", line: "r vfs_read+4", readback: []string{"r10:kprobes/r_vfs_read_4 vfs_read+4"}},
		{kernels: "6.1", line: "p vfs_read+4%return", errno: einval, code: grammar.ErrBadRetprobe, pos: 2},
		{kernels: "6.1", line: "r vfs_read+4", errno: einval, code: grammar.ErrBadRetprobe, pos: 2},
		{kernels: "6.12", line: "p vfs_read+4", readback: []string{"p:kprobes/p_vfs_read_4 vfs_read+4"}},
		{kernels: "6.12", line: "p nosuchsym", errno: einval, code: grammar.ErrBadProbeAddr, pos: 2},
		{kernels: "6.1", line: "p nosuchsym", errno: enoent, code: grammar.ErrBadProbeAddr, pos: 2},
		{kernels: "6.1", line: "p:1ev nosuchsym", errno: enoent, code: grammar.ErrBadProbeAddr, pos: 6},
		{kernels: "6.12", line: "p BIT_initDStream", errno: einval, code: grammar.ErrNonUniqSymbol, pos: 2},
		{kernels: "6.1", line: "p BIT_initDStream", errno: syscall.EADDRNOTAVAIL, code: grammar.ErrNonUniqSymbol, pos: 2},
		{line: "p vfs_read.isra.0", errno: einval, code: grammar.ErrBadProbeAddr, pos: 2, kernels: "6.12"},
		{line: "p jiffies", errno: einval, code: grammar.ErrFailRegProbe, pos: 2},
		{line: "p do_int3", errno: einval, code: grammar.ErrFailRegProbe, pos: 2},
		{line: "p kprobe_int3_handler", errno: einval, code: grammar.ErrFailRegProbe, pos: 2},
		{line: "p 0", errno: einval, code: grammar.ErrFailRegProbe, pos: 2},
		{line: "p 123", readback: []string{"p:kprobes/p_0x000000000000007b 0x000000000000007b"}},
		{line: "p 0x5", readback: []string{"p:kprobes/p_0x0000000000000005 0x0000000000000005"}},
		{line: "p +5", readback: []string{"p:kprobes/p_0x0000000000000005 0x0000000000000005"}},
		{kernels: "6.12", line: "p 0xffffffff8143f690", readback: []string{"p:kprobes/p_0xffffffff8143f690 0xffffffff8143f694"}},
		{kernels: "6.12", line: "p:c 0xffffffff8143f690", readback: []string{"p:kprobes/c 0xffffffff8143f694"}},
		{kernels: "6.12", line: "r 0xffffffff8143f690", readback: []string{"r10:kprobes/r_0xffffffff8143f690 0xffffffff8143f694"}},
		{kernels: "6.12", line: "r 0xffffffff8134cc50", errno: einval, code: grammar.ErrFailRegProbe, pos: 2},
		{kernels: "6.1", line: "p 0xffffffff8134cc50", readback: []string{"p:kprobes/p_0xffffffff8134cc50 0xffffffff8134cc50"}},
		{kernels: "6.1", line: "r 0xffffffff8134cc50", readback: []string{"r10:kprobes/r_0xffffffff8134cc50 0xffffffff8134cc50"}},
		{line: "p :vfs_read", readback: []string{"p:kprobes/p__vfs_read_0 :vfs_read"}},
		{line: "p nomod:vfs_read", readback: []string{"p:kprobes/p_nomod_vfs_read_0 nomod:vfs_read"}},
		{line: "p vmlinux:vfs_read", readback: []string{"p:kprobes/p_vmlinux_vfs_read_0 vmlinux:vfs_read"}},
		{line: "p:ev vfs_read", readback: []string{"p:kprobes/ev vfs_read"}},
		{line: "p:grp/ev vfs_read", readback: []string{"p:grp/ev vfs_read"}},
		{line: "p:grp.ev vfs_read", readback: []string{"p:grp/ev vfs_read"}},
		{line: "p:grp/ vfs_read", readback: []string{"p:grp/p_vfs_read_0 vfs_read"}},
		{line: "p:grp. vfs_read", readback: []string{"p:grp/p_vfs_read_0 vfs_read"}},
		{line: "p:grp-x/ev vfs_read", readback: []string{"p:grp-x/ev vfs_read"}},
		{line: "p:-grp/ev vfs_read", readback: []string{"p:-grp/ev vfs_read"}},
		{line: "p: vfs_read", errno: einval, code: grammar.ErrNoEventName, pos: 2},
		{line: "p:/ev vfs_read", errno: einval, code: grammar.ErrNoGroupName, pos: 2},
		{line: "p:.ev vfs_read", errno: einval, code: grammar.ErrNoGroupName, pos: 2},
		{line: "p:1grp/ev vfs_read", errno: einval, code: grammar.ErrBadGroupName, pos: 2},
		{line: "p:grp/1ev vfs_read", errno: einval, code: grammar.ErrBadEventName, pos: 6},
		{line: "r:1ev vfs_read", errno: einval, code: grammar.ErrBadEventName, pos: 2},
		{line: "p:ev-x vfs_read", errno: einval, code: grammar.ErrBadEventName, pos: 2},
		{line: "p:grp/ev/x vfs_read", errno: einval, code: grammar.ErrBadEventName, pos: 6},
		{line: "p:grp.ev/x vfs_read", errno: einval, code: grammar.ErrBadGroupName, pos: 2},
		{line: "p:" + long[:63] + " vfs_read", readback: []string{"p:kprobes/" + long[:63] + " vfs_read"}},
		{line: "p:" + long[:64] + " vfs_read", errno: einval, code: grammar.ErrEventTooLong, pos: 2},
		{line: "p:" + long[:64] + "/ev vfs_read", errno: einval, code: grammar.ErrGroupTooLong, pos: 2},
		{line: "p:1ev vfs_read $foo", errno: einval, code: grammar.ErrBadEventName, pos: 2},
		{line: "p:ev", errno: einval},
		{line: "p", errno: einval},
		{line: "q vfs_read", errno: einval},
		{line: "f vfs_read", errno: einval},
		{line: "t sched_switch", errno: einval},
		{line: "p /bin/sh:0x10", errno: einval},
		{line: " -:ev", errno: einval},
		{line: "-:", errno: einval},
		{line: "p:kprobes/sched_switch vfs_read", readback: []string{"p:kprobes/sched_switch vfs_read"}},
		{line: "p:sched/sched_switch vfs_read", errno: eexist, code: grammar.ErrEventExist, pos: 0},
		{line: "p:ftrace/function vfs_read", errno: eexist, code: grammar.ErrEventExist, pos: 0},
		{kernels: "6.12", line: "p vfs_read+16", errno: syscall.EILSEQ, code: grammar.ErrBadInsnBndry, pos: 2},
		{kernels: "6.12", line: "p vfs_read+1", errno: syscall.EILSEQ, code: grammar.ErrBadInsnBndry, pos: 2},
		{kernels: "6.12", line: "p 0xffffffff8134cc50", errno: syscall.EILSEQ, code: grammar.ErrBadInsnBndry, pos: 2},
		{kernels: "6.1", line: "p vfs_read+4", errno: syscall.EILSEQ, code: grammar.ErrBadInsnBndry, pos: 2},
		{line: "p:ev vfs_read a=%di b=%si", readback: []string{"p:kprobes/ev vfs_read a=%di b=%si"}},
		// @SYM arguments resolve at registration: after the notrace
		// check, before the address checks; pending probes ignore them.
		{line: "r nomod:foo", readback: []string{"r:kprobes/r_nomod_foo_0 nomod:foo"}},
		{line: "r5 nomod:foo", readback: []string{"r5:kprobes/r_nomod_foo_0 nomod:foo"}},
		{line: "p nomod:foo @nosuch", readback: []string{"p:kprobes/p_nomod_foo_0 nomod:foo arg1=@nosuch"}},
		{line: "p 0x1234 @nosuch", readback: []string{"p:kprobes/p_0x0000000000001234 0x0000000000001234 arg1=@nosuch"}},
		{kernels: "6.12", line: "p nomod:foo*", readback: []string{"p:kprobes/p_nomod_foo__0 nomod:foo*"}},
		{kernels: "6.1", line: "p nomod:foo*", readback: []string{"p:kprobes/p_nomod_foo*_0 nomod:foo*"}},
		{line: "p nomod:a.b", readback: []string{"p:kprobes/p_nomod_a_b_0 nomod:a.b"}},
		{line: "r nomod:foo+4", readback: []string{"r:kprobes/r_nomod_foo_4 nomod:foo+4"}},
		{line: "p nomod:foo%return", readback: []string{"r:kprobes/r_nomod_foo_0 nomod:foo"}},
		// Every address probe has the symbol "unknown" to the kernel's
		// same-probe test.
		{setup: []string{"p:ev 0x1234"}, line: "p:ev 0x5678", errno: eexist, code: grammar.ErrSameProbe, pos: 0},
		{setup: []string{"p:ev 0x1234"}, line: "p:ev 0x1234 %di", errno: eexist, code: grammar.ErrDiffArgType, pos: 12},
		{setup: []string{"p:ev 0x1234"}, line: "-:ev 0x0000000000001234", readback: []string{}},
		{setup: []string{"p:ev vfs_read"}, line: "p:ev 0x1234", readback: []string{"p:kprobes/ev vfs_read", "p:kprobes/ev 0x0000000000001234"}},
		{setup: []string{"p:ev nomod:foo"}, line: "p:ev nomod:foo", errno: eexist, code: grammar.ErrSameProbe, pos: 0},
		{setup: []string{"p:ev nomod:foo"}, line: "p:ev nomod:bar", readback: []string{"p:kprobes/ev nomod:foo", "p:kprobes/ev nomod:bar"}},
		{setup: []string{"p:ev vfs_read"}, line: "p:ev vfs_read+0", errno: eexist, code: grammar.ErrSameProbe, pos: 0},
		{setup: []string{"p:ev vfs_read"}, line: "p:ev vfs_read%return", errno: eexist, code: grammar.ErrDiffProbeType, pos: 0},
		{setup: []string{"r:ev vfs_read"}, line: "r5:ev vfs_write", readback: []string{"r10:kprobes/ev vfs_read", "r5:kprobes/ev vfs_write"}},
		{line: "p:ev vfs_read # comment here", readback: []string{"p:kprobes/ev vfs_read"}},
		{line: "p:ev vfs_read\t%di", readback: []string{"p:kprobes/ev vfs_read arg1=%di"}},
		{line: "p vfs_read @nosuch", errno: enoent, code: grammar.ErrBadProbeAddr, pos: 2},
		{line: "p jiffies @nosuch", errno: einval, code: grammar.ErrFailRegProbe, pos: 2},
		{line: "p do_int3 @nosuch", errno: enoent, code: grammar.ErrBadProbeAddr, pos: 2},
		{line: "p vfs_read+1 @nosuch", errno: enoent, code: grammar.ErrBadProbeAddr, pos: 2},
		{line: "p vfs_read @jiffies+x", errno: einval, code: grammar.ErrFailRegProbe, pos: 2},
		{kernels: "6.12", line: "p ZSTD_decompressSequencesSplitLitBuffer_default.constprop.0+5",
			readback: []string{"p:kprobes/p_ZSTD_decompressSequencesSplitLitBuffer_default_constprop_0_5 ZSTD_decompressSequencesSplitLitBuffer_default.constprop.0+5"}},
		{line: "p:grp/ therm_throt_device_show_package_throttle_total_time_ms",
			readback: []string{"p:grp/p_therm_throt_device_show_package_throttle_total_time_ms_0 therm_throt_device_show_package_throttle_total_time_ms"}},
		{line: "p:ev vfs_read %di %si", readback: []string{"p:kprobes/ev vfs_read arg1=%di arg2=%si"}},
	})
}
