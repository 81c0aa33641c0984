package tracer

import (
	"bytes"
	"debug/elf"
	"debug/gosym"
	"fmt"
	"strings"
	"testing"

	"github.com/ktrace-dev/ktrace/internal/vmtest"
)

// fileOffset returns the file offset of the code of Go function fn in the
// ELF executable b (stripped: the function table of .gopclntab names it):
// what a uprobe line names.
func fileOffset(t *testing.T, b []byte, fn string) uint64 {
	t.Helper()
	f, err := elf.NewFile(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	pcln, text := f.Section(".gopclntab"), f.Section(".text")
	if pcln == nil || text == nil {
		t.Fatal("workload: no .gopclntab or .text")
	}
	data, err := pcln.Data()
	if err != nil {
		t.Fatal(err)
	}
	tab, err := gosym.NewTable(nil, gosym.NewLineTable(data, text.Addr))
	if err != nil {
		t.Fatal(err)
	}
	fun := tab.LookupFunc(fn)
	if fun == nil {
		t.Fatalf("no function %s in the workload", fn)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD && fun.Entry >= p.Vaddr && fun.Entry < p.Vaddr+p.Filesz {
			return fun.Entry - p.Vaddr + p.Off
		}
	}
	t.Fatalf("%s at %#x is in no loaded segment", fn, fun.Entry)
	return 0
}

// TestUprobeRecordVM traces uprobes on the workload (a static Go
// executable) with the kernel's tracer and ktrace record at the same time,
// on both pinned kernels, and requires the same bodies and the same
// "(0xADDR)" or "(0xRET <- 0xFUNC)" part, hit for hit: registers (Go's
// register ABI), the user stack, user memory, arrays, $comm, $retval and
// @+FILE_OFFSET (which 6.12 reads at twice the offset, 6.1 at the
// offset).
func TestUprobeRecordVM(t *testing.T) {
	_, wl := guestBinaries(t)
	openat := fileOffset(t, wl, "syscall.openat")
	mainFn := fileOffset(t, wl, "main.main")
	defs := []traceDef{
		{line: fmt.Sprintf("p:u_open /bin/workload:0x%x dirfd=%%ax:s64 len=%%cx flags=%%di:x32 mode=%%si:u16 c0=+0(%%bx):u8 head=+0(%%bx):x8[4] ret=$stack0 sp=+8(%%sp):x64 c=$comm", openat), kernels: both},
		{line: fmt.Sprintf("p:u_main /bin/workload:0x%x f=@+0x10:u64 hdr=@+0:x32 s=$stack c=$comm", mainFn), kernels: both},
		{line: fmt.Sprintf("r:u_oret /bin/workload:0x%x fd=$retval:s64 c=$comm f=@+0x10:u64 ax=%%ax", openat), kernels: both},
	}
	// Strings in user memory: the workload's writes into a pipe pass
	// one with no NUL in its first 4096 bytes (a fault) and one whose
	// NUL is its 4096th byte (read whole); and an immediate string (a
	// fault on both kernels).
	write := fileOffset(t, wl, "syscall.write")
	defs = append(defs, traceDef{line: fmt.Sprintf(`p:u_str /bin/workload:0x%x n=%%cx s=+0(%%bx):string im=\"hi"`, write), kernels: both})
	vmtest.ForEachKernel(t, func(t *testing.T, k vmtest.Kernel) {
		r := runTraceBoot(t, k, defs)
		for _, d := range defs {
			if !d.kernelAccepts(k.Name) {
				continue
			}
			if want := sameHits(t, k.Name, r, d.event()); len(want) > 0 && !strings.HasPrefix(want[0].ip, "0x") {
				t.Errorf("%s: %s: kernel ip %q", k.Name, d.event(), want[0].ip)
			}
		}
	})
}

// sameHits requires ktrace's hits of event ev to be the kernel's, body and
// "(ip)" part, hit for hit, and returns the kernel's.
func sameHits(t *testing.T, k string, r *bootRun, ev string) []hit {
	t.Helper()
	got, want := r.ktrace[ev], r.kernel[ev]
	if len(want) == 0 || len(got) != len(want) {
		t.Errorf("%s: %s: ktrace %d hits, kernel %d\n%s", k, ev, len(got), len(want), r.summary)
		return nil
	}
	for i := range got {
		if got[i].body != want[i].body || got[i].ip != want[i].ip {
			t.Errorf("%s: %s hit %d:\n ktrace (%s)%s\n kernel (%s)%s", k, ev, i, got[i].ip, got[i].body, want[i].ip, want[i].body)
		}
	}
	t.Logf("%s: %s: %d hits equal, e.g. (%s)%s", k, ev, len(got), got[0].ip, got[0].body)
	return want
}

// TestEprobeRecordVM traces event probes on the kernel's tracepoints with
// the kernel's tracer and ktrace record at the same time, on both pinned
// kernels, and requires the same bodies and the same "(SYSTEM.EVENT)"
// part, hit for hit: numeric fields of each size and sign, a __data_loc
// string, char arrays, and a "char *" field, of which the kernel takes
// the pointer's first byte (so reading through it faults); and "if"
// filters on the attached record's numbers, strings, comm and CPU. On
// 6.12, event probes on fprobe, fexit (with entry data too) and
// tracepoint probe events.
func TestEprobeRecordVM(t *testing.T) {
	defs := []traceDef{
		{line: "e:ep/op syscalls.sys_enter_openat nr=$__syscall_nr dfd=$dfd flags=$flags:x32 mode=$mode fn=$filename fs=+0($filename):ustring", kernels: both},
		{line: "e:ep/rd syscalls/sys_exit_read ret=$ret nr=$__syscall_nr:s16", kernels: both},
		{line: "e:ep/ex sched.sched_process_exec fn=$filename:string pid=$pid:u16 old=$old_pid", kernels: both},
		{line: "e:ep/sw sched.sched_switch prev=$prev_comm:string next=$next_comm:string st=$prev_state:x64 prio=$prev_prio:s8", kernels: both},
		// "if" filters, run by the program on the attached record.
		{line: `e:ep/sf sched.sched_switch prev=$prev_comm:string next=$next_comm:string if prev_comm ~ "work*" || next_comm ~ "*load" && prev_pid != 0`, kernels: both},
		{line: `e:ep/rf syscalls/sys_exit_read ret=$ret if ret > 0 && comm == "workload" && common_pid > 1`, kernels: both},
		{line: `e:ep/xf sched.sched_process_exec fn=$filename:string pid=$pid if filename == "/bin/workload" || CPU > 64`, kernels: both},
		// On fprobe, fexit and tracepoint probe events (6.12): the
		// program runs where the source would and builds its record.
		{line: `f:fp/fop do_sys_openat2 dfd=$arg1 fn=+0($arg2):ustring`, kernels: only612, skip: []string{"6.1"}},
		{line: `f:fp/frd vfs_read%return ret=$retval`, kernels: only612, skip: []string{"6.1"}},
		{line: `t:tp/tex sched_process_exec p=$arg1 pid=$arg2`, kernels: only612, skip: []string{"6.1"}},
		{line: `e:ep/efop fp.fop d=$dfd f=$fn:string`, kernels: only612, skip: []string{"6.1"}},
		{line: `e:ep/efopf fp.fop f=$fn:string if dfd == 0xffffff9c && fn == ""`, kernels: only612, skip: []string{"6.1"}},
		{line: `e:ep/efrd fp/frd r=$ret:s32 fn=$__probe_func if ret > 0`, kernels: only612, skip: []string{"6.1"}},
		{line: `e:ep/etex tp.tex p=$p pid=$pid:s32`, kernels: only612, skip: []string{"6.1"}},
		{line: `f:fp/fwr vfs_write%return cnt=$arg3 ret=$retval`, kernels: only612, skip: []string{"6.1"}},
		{line: `e:ep/efwr fp.fwr c=$cnt r=$ret:s64 if cnt > 1000`, kernels: only612, skip: []string{"6.1"}},
	}
	vmtest.ForEachKernel(t, func(t *testing.T, k vmtest.Kernel) {
		r := runTraceBoot(t, k, defs)
		for _, d := range defs {
			if d.line[0] != 'e' || !d.kernelAccepts(k.Name) {
				continue
			}
			ev := d.event()
			sameHits(t, k.Name, r, ev[strings.IndexByte(ev, '/')+1:]) // trace lines name the event alone
		}
	})
}
