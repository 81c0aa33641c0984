package fetchargs

import (
	"fmt"
	"strings"
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
		sym := a.Ops[i].Data
		var off int64
		if j := strings.IndexAny(sym, "+-"); j >= 0 {
			v, e := kstrtol(sym[j:], 0)
			if e != 0 {
				return fmt.Errorf("fetch arg %s: symbol offset %q: %w", a.Name, sym, e)
			}
			off, sym = v, sym[:j]
		}
		addr, ok := lookupName(m, sym)
		if !ok {
			return fmt.Errorf("fetch arg %s: symbol %q: %w", a.Name, sym, syscall.ENOENT)
		}
		a.Ops[i+1].Imm = addr + uint64(off)
	}
	return nil
}

// lookupName is kallsyms_lookup_name: "MOD:SYM" or a name searched in
// vmlinux first, then in modules.
func lookupName(m *kernel.Model, name string) (uint64, bool) {
	if name == "" || m == nil {
		return 0, false
	}
	mod := ""
	if i := strings.IndexByte(name, ':'); i >= 0 {
		mod, name = name[:i], name[i+1:]
	}
	if s := m.Symbols(mod, name); len(s) > 0 {
		return s[0].Addr, true
	}
	if mod == "" {
		if s := m.AllSymbols(name); len(s) > 0 {
			return s[0].Addr, true
		}
	}
	return 0, false
}
