package kernel

// SymbolExtent is kallsyms_lookup_size_offset seen from the symbol: the
// start and size of the symbol covering addr (LookupAddr), as event
// filters' ".function" values need it.
func (m *Model) SymbolExtent(addr uint64) (start, size uint64, ok bool) {
	s, ok := m.LookupAddr(addr)
	if !ok {
		return 0, 0, false
	}
	return s.Addr, s.Size, true
}
