package kernel

// textImage is the decoded kernel text used for instruction-boundary checks.
type textImage struct{}

// InsnBoundary reports whether addr is an instruction boundary of its
// function. checked is false when the model cannot decide (no kernel image).
func (m *Model) InsnBoundary(addr uint64) (ok, checked bool) {
	return false, false
}
