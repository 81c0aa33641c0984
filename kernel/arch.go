package kernel

import (
	"fmt"
	"strconv"
)

// Arch describes what probe fetch-args need from an architecture: the
// %REG names with their byte offsets in struct pt_regs (the kernel's
// regoffset_table), the registers holding $arg1.., the return-value and
// stack-pointer registers, and PARAM_MAX_STACK, the bound of $stackN and
// $argN.
type Arch struct {
	Name          string         // "x86_64" or "arm64"
	Regs          map[string]int // %REG name -> byte offset in struct pt_regs
	ArgRegs       []string       // $arg1.. registers (x86_64: di si dx cx r8 r9)
	RetReg, SPReg string
	// ParamMaxStack is THREAD_SIZE / sizeof(unsigned long): the largest N
	// accepted in $stackN and $argN.
	ParamMaxStack int
}

// RegOffset returns the pt_regs offset of register name (without '%').
func (a *Arch) RegOffset(name string) (int, bool) {
	off, ok := a.Regs[name]
	return off, ok
}

// x86_64 struct pt_regs layout (arch/x86/include/asm/ptrace.h), the names
// arch/x86/kernel/ptrace.c accepts.
var x86Regs = map[string]int{
	"r15": 0, "r14": 8, "r13": 16, "r12": 24, "bp": 32, "bx": 40,
	"r11": 48, "r10": 56, "r9": 64, "r8": 72, "ax": 80, "cx": 88,
	"dx": 96, "si": 104, "di": 112, "orig_ax": 120, "ip": 128,
	"cs": 136, "flags": 144, "sp": 152, "ss": 160,
}

func arm64Regs() map[string]int {
	r := make(map[string]int, 35)
	for i := 0; i <= 30; i++ {
		r["x"+strconv.Itoa(i)] = 8 * i
	}
	r["lr"] = 240
	r["sp"] = 248
	r["pc"] = 256
	r["pstate"] = 264
	return r
}

// archFor picks the architecture from the build configuration and computes
// PARAM_MAX_STACK the way the kernel's headers derive THREAD_SIZE:
//
//   - x86_64: THREAD_SIZE = PAGE_SIZE << (2 + KASAN_STACK_ORDER), where
//     KASAN_STACK_ORDER is 1 with CONFIG_KASAN: 16 KiB (2048 words), 32 KiB
//     (4096) with KASAN.
//   - arm64: THREAD_SHIFT = 14 + KASAN_THREAD_SHIFT (1 with generic or
//     software-tag KASAN), raised to PAGE_SHIFT when that is larger and
//     stacks are vmapped (64K pages: 8192 words).
func archFor(cfg map[string]string) (*Arch, error) {
	kasan := cfg["CONFIG_KASAN"] == "y"
	switch {
	case cfg["CONFIG_X86_64"] == "y":
		order := 2
		if kasan {
			order++
		}
		threadSize := 4096 << order
		return &Arch{
			Name:          "x86_64",
			Regs:          x86Regs,
			ArgRegs:       []string{"di", "si", "dx", "cx", "r8", "r9"},
			RetReg:        "ax",
			SPReg:         "sp",
			ParamMaxStack: threadSize / 8,
		}, nil
	case cfg["CONFIG_ARM64"] == "y":
		shift := 14
		if cfg["CONFIG_KASAN_GENERIC"] == "y" || cfg["CONFIG_KASAN_SW_TAGS"] == "y" {
			shift++
		}
		pageShift := 12
		if v, err := strconv.Atoi(cfg["CONFIG_ARM64_PAGE_SHIFT"]); err == nil && v > 0 {
			pageShift = v
		}
		if cfg["CONFIG_VMAP_STACK"] == "y" && pageShift > shift {
			shift = pageShift
		}
		return &Arch{
			Name:          "arm64",
			Regs:          arm64Regs(),
			ArgRegs:       []string{"x0", "x1", "x2", "x3", "x4", "x5", "x6", "x7"},
			RetReg:        "x0",
			SPReg:         "sp",
			ParamMaxStack: (1 << shift) / 8,
		}, nil
	}
	return nil, fmt.Errorf("config: unsupported architecture (neither CONFIG_X86_64 nor CONFIG_ARM64 is set)")
}
