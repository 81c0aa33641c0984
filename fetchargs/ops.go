package fetchargs

import (
	"fmt"
	"strings"
	"sync"
)

// OpCode is one instruction of a fetch program, mirroring the kernel's
// enum fetch_op. A program runs in stages: one load (REG … EDATA), any
// number of dereferences, one store, an optional bitfield modification, an
// optional array loop, then END.
type OpCode int

const (
	OpNop OpCode = iota
	// Stage 1: load a value.
	OpReg    // Param: byte offset in struct pt_regs
	OpStack  // Param: stack word index above the stack pointer
	OpStackP // the stack pointer
	OpRetval // the return-value register
	OpImm    // Imm: constant (also @ADDR, resolved @SYM)
	OpComm   // address of current->comm
	OpArg    // Param: 0-based function argument (ABI order)
	OpFOffs  // Imm: uprobe file offset
	OpData   // Data: immediate string
	OpEData  // Offset: slot saved at function entry (Param: argument index)
	// Stage 2: dereference.
	OpDeref  // val = *(unsigned long *)(val + Offset), kernel memory
	OpUDeref // same, user memory
	// Stage 3: store into the record.
	OpStRaw     // Size bytes of val
	OpStMem     // Size bytes read from kernel memory at val+Offset
	OpStUMem    // Size bytes read from user memory at val+Offset
	OpStString  // NUL-terminated kernel string at val+Offset
	OpStUString // NUL-terminated user string at val+Offset
	OpStSymstr  // val rendered as "sym+0xoff/0xsize [mod]"
	OpStEData   // entry-data store (entry programs of return probes)
	// Stage 4: modify.
	OpModBF // BaseSize, LShift, RShift: bitfield extraction
	// Stage 5: loop.
	OpLpArray // Param: element count
	OpTPArg   // event field (eprobes)
	OpEnd
	OpNopSymbol // Data: "sym[+-off]" for the following OpImm, resolved at registration; Param: where the offset starts
)

var opNames = [...]string{
	OpNop: "NOP", OpReg: "REG", OpStack: "STACK", OpStackP: "STACKP",
	OpRetval: "RETVAL", OpImm: "IMM", OpComm: "COMM", OpArg: "ARG",
	OpFOffs: "FOFFS", OpData: "DATA", OpEData: "EDATA", OpDeref: "DEREF",
	OpUDeref: "UDEREF", OpStRaw: "ST_RAW", OpStMem: "ST_MEM",
	OpStUMem: "ST_UMEM", OpStString: "ST_STRING", OpStUString: "ST_USTRING",
	OpStSymstr: "ST_SYMSTR", OpStEData: "ST_EDATA", OpModBF: "MOD_BF",
	OpLpArray: "LP_ARRAY", OpTPArg: "TP_ARG", OpEnd: "END",
	OpNopSymbol: "NOP_SYMBOL",
}

func (c OpCode) String() string {
	if c >= 0 && int(c) < len(opNames) {
		return opNames[c]
	}
	return fmt.Sprintf("OpCode(%d)", int(c))
}

// Op is one fetch instruction. Which fields matter depends on Code (see
// the OpCode constants).
type Op struct {
	Code     OpCode
	Param    uint32
	Offset   int64
	Size     int
	Imm      uint64
	Data     string
	BaseSize uint8
	LShift   uint8
	RShift   uint8
}

// String renders the op the way the kernel's fetch-argument dump does
// (CONFIG_PROBE_EVENTS_DUMP_FETCHARG).
func (o Op) String() string {
	switch o.Code {
	case OpReg, OpStack, OpArg, OpLpArray:
		return fmt.Sprintf("%s(%d)", o.Code, o.Param)
	case OpImm:
		return fmt.Sprintf("IMM(0x%x)", o.Imm)
	case OpFOffs:
		return fmt.Sprintf("FOFFS(0x%x)", o.Imm)
	case OpData:
		return fmt.Sprintf("IMMSTR(%s)", o.Data)
	case OpNopSymbol:
		return fmt.Sprintf("NOP_SYMBOL(%s)", o.Data)
	case OpDeref, OpUDeref, OpEData, OpStEData:
		return fmt.Sprintf("%s(offset=%d)", o.Code, o.Offset)
	case OpStRaw:
		return fmt.Sprintf("ST_RAW(size=%d)", o.Size)
	case OpStMem, OpStUMem, OpStString, OpStUString, OpStSymstr:
		return fmt.Sprintf("%s(offset=%d,size=%d)", o.Code, o.Offset, o.Size)
	case OpModBF:
		return fmt.Sprintf("MOD_BF(basesize=%d,lshift=%d,rshift=%d)", o.BaseSize, o.LShift, o.RShift)
	}
	return o.Code.String()
}

// ProgramString joins a program's ops with " -> ", as the kernel's dump.
func ProgramString(ops []Op) string {
	s := make([]string, len(ops))
	for i, o := range ops {
		s[i] = o.String()
	}
	return strings.Join(s, " -> ")
}

// fetchInsnMax is FETCH_INSN_MAX: a program has at most 16 instructions,
// the last of which is END.
const fetchInsnMax = 16

// program is the kernel's fixed fetch_insn buffer during parsing: all NOP
// except the final END, filled through an index that mirrors its pointer
// arithmetic.
type program struct {
	ins [fetchInsnMax]Op
}

// programs recycles the 1 KiB instruction buffers: one is needed per
// argument only while it is parsed, and allocating it was most of the
// memory a probe line cost.
var programs = sync.Pool{New: func() any { return new(program) }}

// getProgram returns an empty program (all NOP, then END).
func getProgram() *program {
	p := programs.Get().(*program)
	*p = program{}
	p.ins[fetchInsnMax-1].Code = OpEnd
	return p
}

// putProgram recycles p, which must no longer be used.
func putProgram(p *program) { programs.Put(p) }

const progEnd = fetchInsnMax - 1

// ops returns the program up to and including END.
func (p *program) ops() []Op {
	for i := range p.ins {
		if p.ins[i].Code == OpEnd {
			out := make([]Op, i+1)
			copy(out, p.ins[:i+1])
			return out
		}
	}
	out := make([]Op, len(p.ins))
	copy(out, p.ins[:])
	return out
}
