package kernel

import (
	"encoding/binary"
	"strings"
	"sync"
)

// System call names, as the kernel's get_syscall_name() gives them to hist
// triggers' .syscall keys: the name of the syscall's metadata ("sys_write"),
// found from the function sys_call_table holds for the number. Only a
// model of the running kernel can read the table.

type syscallTable struct {
	once  sync.Once
	names []string // by number; "" for a number without metadata
}

// SyscallName returns the metadata name of system call nr ("sys_write"),
// false when the kernel has none for it (an unimplemented number, a
// number past the table) or the model cannot read the running kernel's
// sys_call_table.
func (m *Model) SyscallName(nr uint64) (string, bool) {
	m.syscalls.once.Do(func() { m.syscalls.names = m.readSyscallTable() })
	if nr >= uint64(len(m.syscalls.names)) || m.syscalls.names[nr] == "" {
		return "", false
	}
	return m.syscalls.names[nr], true
}

// readSyscallTable reads sys_call_table's entries (its kallsyms extent)
// and names each from the symbol it points to: "__x64_sys_write" (the
// architecture's wrapper) is sys_write. sys_ni_syscall, the entry of
// numbers without a system call, has no metadata.
func (m *Model) readSyscallTable() []string {
	r := m.liveText()
	if r == nil {
		return nil
	}
	addr, ok := m.LookupName("sys_call_table")
	if !ok {
		return nil
	}
	sym, ok := m.LookupAddr(addr)
	if !ok || sym.Size == 0 || sym.Size > 8*4096 {
		return nil
	}
	buf := make([]byte, sym.Size&^7)
	if err := r.ReadKernel(buf, addr); err != nil {
		return nil
	}
	names := make([]string, len(buf)/8)
	for i := range names {
		fn, ok := m.LookupAddr(binary.LittleEndian.Uint64(buf[8*i:]))
		if !ok {
			continue
		}
		name := fn.Name
		if j := strings.Index(name, "_sys_"); strings.HasPrefix(name, "__") && j >= 0 {
			name = name[j+1:]
		}
		if strings.HasPrefix(name, "sys_") && name != "sys_ni_syscall" {
			names[i] = name
		}
	}
	return names
}
