// Package grammar is the syntax of probe-definition lines: splitting a
// line into argv as the kernel does, the command head (kind, maxactive,
// group and event), probe places and event names, the kernel's number
// parsing (kstrtox), the per-release dialect table, and the one table of
// error_log codes and messages (with the hints beside it) that every
// check reports through.
package grammar
