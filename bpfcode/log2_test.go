package bpfcode

import (
	"math"
	"testing"

	"github.com/cilium/ebpf/asm"
)

// runALU runs a straight-line or forward-jumping program of 64-bit ALU
// and jump instructions (what log2 emits) with R1 = in, and returns R1.
// Jump targets are the emitter's labels.
func runALU(t *testing.T, ins asm.Instructions, in uint64) uint64 {
	t.Helper()
	at := map[string]int{}
	for i, x := range ins {
		if s := x.Symbol(); s != "" {
			at[s] = i
		}
	}
	var r [11]uint64
	r[1] = in
	for pc, steps := 0, 0; pc < len(ins); steps++ {
		if steps > 1000 {
			t.Fatal("program does not end")
		}
		x := ins[pc]
		pc++
		src := uint64(x.Constant)
		if x.OpCode.Source() == asm.RegSource {
			src = r[x.Src]
		}
		if x.OpCode.IsDWordLoad() {
			r[x.Dst] = uint64(x.Constant)
			continue
		}
		switch x.OpCode.Class() {
		case asm.ALU64Class:
			switch x.OpCode.ALUOp() {
			case asm.Mov:
				r[x.Dst] = src
			case asm.Add:
				r[x.Dst] += src
			case asm.RSh:
				r[x.Dst] >>= src
			default:
				t.Fatalf("instruction %v", x)
			}
		case asm.JumpClass:
			var jump bool
			d := r[x.Dst]
			switch x.OpCode.JumpOp() {
			case asm.Exit:
				return r[1]
			case asm.Ja:
				jump = true
			case asm.JEq:
				jump = d == src
			case asm.JLE:
				jump = d <= src
			case asm.JGT:
				jump = d > src
			default:
				t.Fatalf("instruction %v", x)
			}
			if jump && x.Reference() != "" {
				pc = at[x.Reference()]
			}
		default:
			t.Fatalf("instruction %v", x)
		}
	}
	return r[1]
}

// TestLog2 runs the .log2 key's code on the values the kernels were
// measured with in the VM ("hist:keys=c8.log2" and "c16.log2" on a kprobe
// of vfs_write, c8=$arg3:s8 c16=$arg3:s16, dd writing 1 to 65535 bytes):
// 0 and 1 read 2^0, 2 2^1, 3 and 4 2^2, 31 2^5, 128 2^7, 129 to 255
// 2^8; a negative value, sign-extended, 2^64 on 6.1.192 and 2^0 on
// 6.12.95 (Log2Wraps).
func TestLog2(t *testing.T) {
	neg := func(v int64) uint64 { return uint64(v) }
	cases := []struct{ in, want, wraps uint64 }{
		{0, 0, 0}, {1, 0, 0}, {2, 1, 1}, {3, 2, 2}, {4, 2, 2}, {31, 5, 5},
		{128, 7, 7}, {129, 8, 8}, {255, 8, 8},
		{1 << 63, 63, 63},
		{1<<63 + 1, 64, 0}, {neg(-1), 64, 0}, {neg(-2), 64, 0}, {neg(-28), 64, 0},
		{neg(-128), 64, 0}, {neg(-32768), 64, 0}, {math.MaxUint64 - 1, 64, 0},
	}
	for _, wraps := range []bool{false, true} {
		e := &emitter{p: &ProbeProgram{}}
		e.log2(wraps)
		e.emit(asm.Return())
		ins := e.program()
		for _, c := range cases {
			want := c.want
			if wraps {
				want = c.wraps
			}
			if got := runALU(t, ins, c.in); got != want {
				t.Errorf("log2(%#x), wraps %v: %d, the kernel's %d", c.in, wraps, got, want)
			}
		}
	}
}
