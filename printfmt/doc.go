// Package printfmt prints a static trace event's record as the kernel's
// trace file does, from the event's format file: the record layout of its
// "field:" lines and the C expressions of its "print fmt:" line (REC->
// fields, __get_str, __print_flags, __print_symbolic, casts, arithmetic,
// comparisons and conditionals, and the printf conversions of the kernel's
// trace_seq_printf). Syscall events, which the kernel prints with their
// own routines rather than their print fmt, are printed that way.
//
// What the language refers to but a record cannot give (an enum constant
// or kernel symbol the format names, a hashed %p pointer whose key only
// the kernel knows) makes Render fail; Raw then prints the fields as
// name=value pairs, as trace-cmd does when it cannot parse a print fmt.
package printfmt
