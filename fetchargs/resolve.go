package fetchargs

import (
	"fmt"
	"syscall"

	"github.com/ktrace-dev/ktrace/kernel"
)

// ResolveSymbols fills in the addresses of the argument's @SYM[+-OFF]
// references, as the kernel does when it registers the probe
// (traceprobe_update_arg). The error wraps ENOENT for an unknown symbol
// (the kernel reports BAD_PROBE_ADDR) and EINVAL for an offset that is not
// a number (FAIL_REG_PROBE).
func (a *Arg) ResolveSymbols(m *kernel.Model) error {
	for i := range a.Ops {
		if a.Ops[i].Code != OpNopSymbol {
			continue
		}
		if i+1 >= len(a.Ops) || a.Ops[i+1].Code != OpImm {
			return fmt.Errorf("fetch arg %s: symbol %q: %w", a.Name, a.Ops[i].Data, syscall.EINVAL)
		}
		// Param is where the grammar found the offset in Data.
		sym := a.Ops[i].Data
		var off int64
		if j := int(a.Ops[i].Param); j < len(sym) {
			v, e := kstrtol(sym[j:], 0)
			if e != 0 {
				return fmt.Errorf("fetch arg %s: symbol offset %q: %w", a.Name, sym, e)
			}
			off, sym = v, sym[:j]
		}
		addr, ok := lookupSymbol(m, sym)
		if !ok {
			return fmt.Errorf("fetch arg %s: symbol %q: %w", a.Name, sym, syscall.ENOENT)
		}
		a.Ops[i+1].Imm = addr + uint64(off)
	}
	return nil
}

// lookupSymbol is the model's kallsyms_lookup_name, for a nil model too.
func lookupSymbol(m *kernel.Model, sym string) (uint64, bool) {
	if m == nil {
		return 0, false
	}
	return m.LookupName(sym)
}
