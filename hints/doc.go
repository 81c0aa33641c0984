// Package hints explains a rejected probe line beyond the kernel's own
// error_log message, from what the kernel model knows: the nearest
// symbol, type, register, $-variable or BTF member, why a place cannot be
// probed, or which release a syntax needs. Which codes get which hint is
// the table beside the error table (grammar.Code.Hint); this package
// builds the text. Hints never change the kernel's message, caret or
// errno.
package hints
