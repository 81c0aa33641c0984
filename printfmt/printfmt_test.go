package printfmt

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"
)

// format reads a 6.12.95 format file from the pinned kernels' snapshot.
func format(t *testing.T, sys, name string) *Event {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "shared", "kernels", "6.12", "tracepoints", "events", sys, name, "format"))
	if err != nil {
		t.Skipf("no 6.12 snapshot: %v", err)
	}
	ev, err := Parse(sys, string(b))
	if err != nil {
		t.Fatal(err)
	}
	return ev
}

// record builds a record of the event with the given field values
// (numbers, or strings for char arrays).
func record(t *testing.T, ev *Event, vals map[string]any) []byte {
	t.Helper()
	end := 0
	for _, f := range ev.Fields {
		if e := f.Offset + f.Size; e > end {
			end = e
		}
	}
	rec := make([]byte, end, end+64)
	binary.LittleEndian.PutUint16(rec, uint16(ev.ID))
	for name, v := range vals {
		f, ok := ev.Field(name)
		if !ok {
			t.Fatalf("no field %s", name)
		}
		switch v := v.(type) {
		case string:
			if f.DataLoc {
				off := len(rec)
				rec = append(rec, v...)
				rec = append(rec, 0)
				binary.LittleEndian.PutUint32(rec[f.Offset:], uint32(off)|uint32(len(v)+1)<<16)
				continue
			}
			copy(rec[f.Offset:f.Offset+f.Size], v)
		case int, uint64:
			var u uint64
			if i, ok := v.(int); ok {
				u = uint64(i)
			} else {
				u = v.(uint64)
			}
			switch f.Size {
			case 1:
				rec[f.Offset] = byte(u)
			case 2:
				binary.LittleEndian.PutUint16(rec[f.Offset:], uint16(u))
			case 4:
				binary.LittleEndian.PutUint32(rec[f.Offset:], uint32(u))
			case 8:
				binary.LittleEndian.PutUint64(rec[f.Offset:], u)
			}
		}
	}
	return rec
}

// The expected lines follow the kernel's print fmts by hand: sched_switch's
// prev_state through __print_flags (0 is "R", TASK_REPORT_MAX adds "+"),
// softirq_entry's vector name through __print_symbolic, the syscall
// events through print_syscall_enter and print_syscall_exit, a
// __get_str string, a zero-padded %03d.
func TestRender(t *testing.T) {
	tests := []struct {
		sys, name string
		vals      map[string]any
		want      string
	}{
		{"sched", "sched_switch", map[string]any{"prev_comm": "sh", "prev_pid": 55, "prev_prio": 120, "prev_state": 1, "next_comm": "swapper/0", "next_pid": 0, "next_prio": 120},
			"prev_comm=sh prev_pid=55 prev_prio=120 prev_state=S ==> next_comm=swapper/0 next_pid=0 next_prio=120"},
		{"sched", "sched_switch", map[string]any{"prev_comm": "kworker/0:1", "prev_pid": 9, "prev_prio": 120, "prev_state": 0, "next_comm": "sh", "next_pid": 55, "next_prio": 120},
			"prev_comm=kworker/0:1 prev_pid=9 prev_prio=120 prev_state=R ==> next_comm=sh next_pid=55 next_prio=120"},
		{"sched", "sched_switch", map[string]any{"prev_comm": "a", "prev_pid": 1, "prev_prio": 120, "prev_state": 0x100, "next_comm": "b", "next_pid": 2, "next_prio": 120},
			"prev_comm=a prev_pid=1 prev_prio=120 prev_state=R+ ==> next_comm=b next_pid=2 next_prio=120"},
		{"sched", "sched_switch", map[string]any{"prev_comm": "a", "prev_pid": 1, "prev_prio": 120, "prev_state": 0x402, "next_comm": "b", "next_pid": 2, "next_prio": 120},
			"prev_comm=a prev_pid=1 prev_prio=120 prev_state=D ==> next_comm=b next_pid=2 next_prio=120"},
		{"sched", "sched_wakeup", map[string]any{"comm": "sh", "pid": 7, "prio": 120, "target_cpu": 1},
			"comm=sh pid=7 prio=120 target_cpu=001"},
		{"sched", "sched_process_exec", map[string]any{"filename": "/bin/true", "pid": 70, "old_pid": 70},
			"filename=/bin/true pid=70 old_pid=70"},
		{"irq", "softirq_entry", map[string]any{"vec": 1}, "vec=1 [action=TIMER]"},
		{"irq", "softirq_entry", map[string]any{"vec": 12}, "vec=12 [action=0xc]"},
		{"irq", "irq_handler_entry", map[string]any{"irq": 4, "name": "ttyS0"}, "irq=4 name=ttyS0"},
		{"syscalls", "sys_enter_openat", map[string]any{"dfd": -100, "filename": 0x7ffd1000, "flags": 0x8000, "mode": 0},
			"sys_openat(dfd: ffffffffffffff9c, filename: 7ffd1000, flags: 8000, mode: 0)"},
		{"syscalls", "sys_exit_openat", map[string]any{"ret": 3}, "sys_openat -> 0x3"},
		{"syscalls", "sys_exit_openat", map[string]any{"ret": -2}, "sys_openat -> 0xfffffffffffffffe"},
		{"raw_syscalls", "sys_exit", map[string]any{"id": 257, "ret": 3}, "NR 257 = 3"},
	}
	for _, tt := range tests {
		ev := format(t, tt.sys, tt.name)
		got, err := ev.Render(record(t, ev, tt.vals), nil)
		if err != nil {
			t.Errorf("%s/%s: %v", tt.sys, tt.name, err)
			continue
		}
		if got != tt.want {
			t.Errorf("%s/%s:\n got %q\nwant %q", tt.sys, tt.name, got, tt.want)
		}
	}
}

// A print fmt naming what the record does not hold (block's
// IOPRIO_CLASS_* enum constants) or printing a hashed pointer fails, and
// Raw prints the fields.
func TestRenderFallback(t *testing.T) {
	ev := format(t, "kmem", "kfree")
	rec := record(t, ev, map[string]any{"call_site": 0x1234, "ptr": 0x5678})
	if _, err := ev.Render(rec, nil); err == nil {
		t.Error("kfree rendered (pS without symbols, a hashed pointer)")
	}
	if got, want := ev.Raw(rec), "call_site=0x1234 ptr=0x5678"; got != want {
		t.Errorf("raw: got %q, want %q", got, want)
	}
	ev = format(t, "block", "block_rq_issue")
	if _, err := ev.Render(record(t, ev, map[string]any{"rwbs": "R", "cmd": ""}), nil); err == nil {
		t.Error("block_rq_issue (IOPRIO_CLASS_NONE) rendered")
	}
}

// With the hash-ptr option cleared a bare %p prints the address as the
// kernel's %px does: 16 hex digits, zero-padded.
func TestRawPointers(t *testing.T) {
	ev := format(t, "net", "net_dev_xmit")
	rec := record(t, ev, map[string]any{"name": "lo", "skbaddr": uint64(0xffff888003c1e000), "len": 98, "rc": 0})
	got, err := ev.RenderOpts(rec, Options{RawPointers: true})
	if err != nil {
		t.Fatal(err)
	}
	if want := "dev=lo skbaddr=ffff888003c1e000 len=98 rc=0"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if _, err := ev.Render(rec, nil); err == nil {
		t.Error("a hashed pointer rendered")
	}
}

// Every format file of both pinned kernels parses, and every event renders
// a zeroed record and random records without panicking (a print fmt ktrace
// cannot evaluate fails with an error; Raw always prints).
func TestAllFormats(t *testing.T) {
	for _, k := range []string{"6.1", "6.12"} {
		ms, _ := filepath.Glob(filepath.Join("..", "..", "shared", "kernels", k, "tracepoints", "events", "*", "*", "format"))
		if len(ms) == 0 {
			t.Skipf("no %s snapshot", k)
		}
		rendered := 0
		for _, m := range ms {
			b, err := os.ReadFile(m)
			if err != nil {
				t.Fatal(err)
			}
			sys := filepath.Base(filepath.Dir(filepath.Dir(m)))
			ev, err := Parse(sys, string(b))
			if err != nil {
				t.Errorf("%s: %v", m, err)
				continue
			}
			end := 0
			for _, f := range ev.Fields {
				if e := f.Offset + f.Size; e > end {
					end = e
				}
			}
			for seed := 0; seed < 4; seed++ {
				rec := make([]byte, end+64)
				for i := range rec {
					if seed > 0 {
						rec[i] = byte((i*131 + seed*7919) >> 3)
					}
				}
				if _, err := ev.Render(rec, nil); err == nil && seed == 0 {
					rendered++
				}
				_ = ev.Raw(rec)
				_ = ev.Raw(rec[:len(rec)/2])
				_, _ = ev.Render(rec[:len(rec)/2], nil)
			}
		}
		t.Logf("%s: %d formats, %d render a zeroed record", k, len(ms), rendered)
	}
}
