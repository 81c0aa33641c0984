package fetchargs

import (
	"strings"
	"testing"

	"github.com/ktrace-dev/ktrace/internal/vmtest"
)

// The fetch programs below follow from the kernel's parse rules
// (parse_probe_arg, parse_btf_field, finalize_fetch_insn) worked out by
// hand; BTF member offsets are those of the pinned 6.12 build, which the
// kernel's own %pD rewrite there shows (+0x48 f_path.dentry, +0x28
// d_name.name). Register offsets are struct pt_regs on x86_64.
func TestFetchPrograms(t *testing.T) {
	tests := []struct {
		kernel string
		line   string
		want   []string // one program per argument
		types  []string // FieldType per argument
	}{
		{"6.12", "p vfs_read +8(%di):u32", []string{"REG(112) -> ST_MEM(offset=8,size=4) -> END"}, []string{"u32"}},
		{"6.1", "p vfs_read +0(+8(%si)):string", []string{"REG(104) -> DEREF(offset=8) -> ST_STRING(offset=0,size=4) -> END"}, []string{"__data_loc char[]"}},
		{"6.12", "p vfs_read -8(%sp):s16", []string{"REG(152) -> ST_MEM(offset=-8,size=2) -> END"}, []string{"s16"}},
		{"6.12", "p vfs_read +u8(%si):x32", []string{"REG(104) -> ST_UMEM(offset=8,size=4) -> END"}, []string{"u32"}},
		{"6.12", "p vfs_read +u0(%si):string", []string{"REG(104) -> ST_USTRING(offset=0,size=4) -> END"}, []string{"__data_loc char[]"}},
		{"6.12", "p vfs_read +0(%si):ustring", []string{"REG(104) -> ST_USTRING(offset=0,size=4) -> END"}, []string{"__data_loc char[]"}},
		{"6.12", "p vfs_read $comm", []string{"COMM -> ST_STRING(offset=0,size=4) -> END"}, []string{"__data_loc char[]"}},
		{"6.12", `p vfs_read \"hi"`, []string{"IMMSTR(hi) -> ST_STRING(offset=0,size=4) -> END"}, []string{"__data_loc char[]"}},
		{"6.12", `p vfs_read \-1:s8 \0x10`, []string{"IMM(0xffffffffffffffff) -> ST_RAW(size=1) -> END", "IMM(0x10) -> ST_RAW(size=8) -> END"}, []string{"s8", "u64"}},
		{"6.12", `p vfs_read \1:string`, []string{"IMM(0x1) -> ST_STRING(offset=0,size=4) -> END"}, []string{"__data_loc char[]"}},
		{"6.12", "p vfs_read %ax:symstr", []string{"REG(80) -> ST_SYMSTR(offset=0,size=4) -> END"}, []string{"__data_loc char[]"}},
		{"6.12", "p vfs_read @jiffies+8:u32", []string{"NOP_SYMBOL(jiffies+8) -> IMM(0xffffffff82c079c8) -> ST_MEM(offset=0,size=4) -> END"}, []string{"u32"}},
		{"6.1", "p vfs_read @jiffies", []string{"NOP_SYMBOL(jiffies) -> IMM(0xffffffff82a079c0) -> ST_MEM(offset=0,size=8) -> END"}, []string{"u64"}},
		{"6.12", "p vfs_read @0x1000:u8", []string{"IMM(0x1000) -> ST_MEM(offset=0,size=1) -> END"}, []string{"u8"}},
		{"6.12", "p vfs_read +0(%di):b4@2/32", []string{"REG(112) -> ST_MEM(offset=0,size=4) -> MOD_BF(basesize=4,lshift=26,rshift=28) -> END"}, []string{"u32"}},
		{"6.12", "p vfs_read %di:b1@63/64", []string{"REG(112) -> ST_RAW(size=8) -> MOD_BF(basesize=8,lshift=0,rshift=63) -> END"}, []string{"u64"}},
		{"6.12", "p vfs_read +0(%di):u16[4]", []string{"REG(112) -> ST_MEM(offset=0,size=2) -> LP_ARRAY(4) -> END"}, []string{"u16[4]"}},
		{"6.12", "p vfs_read +0(%di):string[2]", []string{"REG(112) -> DEREF(offset=0) -> ST_STRING(offset=0,size=4) -> LP_ARRAY(2) -> END"}, []string{"__data_loc char[][2]"}},
		{"6.12", "p vfs_read $stack $stack3 x=$arg7", []string{"STACKP -> ST_RAW(size=8) -> END", "STACK(3) -> ST_RAW(size=8) -> END", "ARG(6) -> ST_RAW(size=8) -> END"}, []string{"u64", "u64", "u64"}},
		{"6.1", "p vfs_read $arg2:u32", []string{"ARG(1) -> ST_RAW(size=4) -> END"}, []string{"u32"}},
		{"6.12", "p vfs_read $arg2:u32", []string{"ARG(1) -> ST_RAW(size=4) -> END"}, []string{"u32"}},
		{"6.12", "p vfs_read file->f_flags", []string{"ARG(0) -> ST_MEM(offset=48,size=4) -> END"}, []string{"u32"}},
		{"6.12", "p vfs_read file->f_path.dentry->d_name.name:string", []string{"ARG(0) -> DEREF(offset=72) -> DEREF(offset=40) -> ST_STRING(offset=0,size=4) -> END"}, []string{"__data_loc char[]"}},
		{"6.12", "p vfs_read file:%pD", []string{"ARG(0) -> DEREF(offset=72) -> DEREF(offset=40) -> ST_STRING(offset=0,size=4) -> END"}, []string{"__data_loc char[]"}},
		{"6.12", "p vfs_read +0(file)", []string{"ARG(0) -> ST_MEM(offset=0,size=8) -> END"}, []string{"u64"}},
		{"6.12", "r vfs_read $retval", []string{"RETVAL -> ST_RAW(size=8) -> END"}, []string{"s64"}},
		{"6.1", "r vfs_read $retval", []string{"RETVAL -> ST_RAW(size=8) -> END"}, []string{"u64"}},
		{"6.12", "r vfs_read $arg3 buf c=count:u8", []string{"EDATA(offset=0) -> ST_RAW(size=8) -> END", "EDATA(offset=8) -> ST_RAW(size=8) -> END", "EDATA(offset=0) -> ST_RAW(size=1) -> END"}, []string{"u64", "u64", "u8"}},
		{"6.12", "f vfs_read%return $retval file->f_flags", []string{"RETVAL -> ST_RAW(size=8) -> END", "EDATA(offset=0) -> ST_MEM(offset=48,size=4) -> END"}, []string{"s64", "u32"}},
		// BTF bitfield members get a 64-bit-container MOD_BF step on top of
		// the byte-addressed load (parse_btf_bitfield).
		{"6.12", "p wake_up_process p->in_iowait p->__mce_reserved", []string{
			"ARG(0) -> ST_MEM(offset=2360,size=4) -> MOD_BF(basesize=8,lshift=59,rshift=63) -> END",
			"ARG(0) -> ST_MEM(offset=5280,size=8) -> MOD_BF(basesize=8,lshift=0,rshift=2) -> END",
		}, []string{"u32", "u64"}},
		{"6.12", "p do_sys_openat2 filename:ustring", []string{"ARG(1) -> ST_USTRING(offset=0,size=4) -> END"}, []string{"__data_loc char[]"}},
		{"6.12", "t sched_switch prev->pid prev_state", []string{"ARG(2) -> ST_MEM(offset=2432,size=4) -> END", "ARG(4) -> ST_RAW(size=4) -> END"}, []string{"s32", "u32"}},
	}
	for _, tc := range tests {
		t.Run(tc.kernel+"/"+tc.line, func(t *testing.T) {
			m := vmtest.Model(t, tc.kernel)
			res := runLine(m, tc.line)
			if res.err != nil {
				t.Fatalf("rejected: %v", res.err)
			}
			if err := resolveAll(m, res.args); err != nil {
				t.Fatal(err)
			}
			if len(res.args) != len(tc.want) {
				t.Fatalf("%d args, want %d", len(res.args), len(tc.want))
			}
			for i, a := range res.args {
				if got := ProgramString(a.Ops); got != tc.want[i] {
					t.Errorf("arg %d %s:\n got %s\nwant %s", i, a.Text(), got, tc.want[i])
				}
				if got := a.FieldType(); got != tc.types[i] {
					t.Errorf("arg %d type %s, want %s", i, got, tc.types[i])
				}
				if n := len(a.Ops); n > fetchInsnMax || a.Ops[n-1].Code != OpEnd {
					t.Errorf("arg %d: program not END-terminated within %d ops", i, fetchInsnMax)
				}
			}
		})
	}
}

// TestEntryArgs checks the entry-data slots a return probe saves.
func TestEntryArgs(t *testing.T) {
	m := vmtest.Model(t, "6.12")
	res := runLine(m, "r vfs_read $arg3 buf c=count:u8 $retval")
	if res.err != nil {
		t.Fatal(res.err)
	}
	if got := EntryArgs(res.args); len(got) != 2 || got[0] != 2 || got[1] != 1 {
		t.Errorf("EntryArgs = %v, want [2 1]", got)
	}
}

// TestArgFormatFacts checks the format-file helpers against the VM's
// format file for "p:ev vfs_read +0(%di):string[3]" and friends.
func TestArgFormatFacts(t *testing.T) {
	m := vmtest.Model(t, "6.12")
	res := runLine(m, `p vfs_read +0(%di):string[3] +0(%di):u32[2] a=%di:s32 $comm`)
	if res.err != nil {
		t.Fatal(res.err)
	}
	want := []struct{ field, pfmt, pargs string }{
		{"__data_loc char[][3] arg1", `{\"%s\",\"%s\",\"%s\"}`, "__get_str(arg1[0]), __get_str(arg1[1]), __get_str(arg1[2])"},
		{"u32 arg2[]", "{%u,%u}", "REC->arg2[0], REC->arg2[1]"},
		{"s32 a", "%d", "REC->a"},
		{"__data_loc char[] arg4", `\"%s\"`, "__get_str(arg4)"},
	}
	for i, a := range res.args {
		if got := a.FormatField(); got != want[i].field {
			t.Errorf("arg %d field %q, want %q", i, got, want[i].field)
		}
		if got := a.PrintFmt(); got != want[i].pfmt {
			t.Errorf("arg %d fmt %q, want %q", i, got, want[i].pfmt)
		}
		if got := a.PrintArgs(); got != want[i].pargs {
			t.Errorf("arg %d args %q, want %q", i, got, want[i].pargs)
		}
	}
	if res.args[0].Size != 12 || res.args[1].Size != 8 || !res.args[2].Signed() {
		t.Errorf("sizes %d %d signed %v", res.args[0].Size, res.args[1].Size, res.args[2].Signed())
	}
	if !res.args[0].SameType(res.args[0]) || res.args[0].SameType(res.args[1]) {
		t.Error("SameType")
	}
}

// TestKstrto checks the kernel number parsing rules the parser relies on.
func TestKstrto(t *testing.T) {
	for _, tc := range []struct {
		s    string
		base int
		v    uint64
		ok   bool
	}{
		{"10", 0, 10, true}, {"0x10", 0, 16, true}, {"010", 0, 8, true},
		{"+5", 0, 5, true}, {"0x", 0, 0, false}, {"", 0, 0, false},
		{"18446744073709551615", 0, 1<<64 - 1, true}, {"18446744073709551616", 0, 0, false},
		{"12x", 0, 0, false}, {"09", 0, 0, false}, {"9", 10, 9, true},
	} {
		v, e := kstrtoul(tc.s, tc.base)
		if (e == 0) != tc.ok || (tc.ok && v != tc.v) {
			t.Errorf("kstrtoul(%q,%d) = %d,%v", tc.s, tc.base, v, e)
		}
	}
	if v, e := kstrtol("-8", 0); e != 0 || v != -8 {
		t.Errorf("kstrtol(-8) = %d,%v", v, e)
	}
	if _, e := kstrtol("-+8", 0); e == 0 {
		t.Error("kstrtol(-+8) accepted")
	}
	if v, rest := simpleStrtoul("0x4@2", 0); v != 4 || rest != "@2" {
		t.Errorf("simple_strtoul = %d %q", v, rest)
	}
	if !strings.Contains(ProgramString([]Op{{Code: OpEnd}}), "END") {
		t.Error("ProgramString")
	}
}
