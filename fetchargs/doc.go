// Package fetchargs checks the fetch arguments of kprobe, kretprobe,
// fprobe and tprobe definitions the way Linux does
// (kernel/trace/trace_probe.c), over the trees the grammar package parses
// them into (grammar.Argument), and turns each accepted argument into a
// typed fetch program (Arg.Ops) plus the facts the event's format file
// needs (FieldType, FormatField, Size, Signed, PrintFmt, PrintArgs).
//
// A caller creating one probe builds a Context (kernel model, dialect,
// probe kind, return/entry flags, probed function), calls PrepareArgs on
// the whole line's argv and then Parse for each returned Token in order,
// passing the arguments accepted so far.
//
// Errors follow the kernel's error_log: a *grammar.Error names the code,
// the argv index and the offset inside that token, and carries the errno
// of the failed write. Code grammar.ErrNone means the write fails without
// an error_log entry. When Linux writes several entries for one failure
// the error is a *LogError; Logs returns the entries in order either way.
// An Off of UnpredictableOffset marks a caret Linux computes from a stale
// pointer. Context.LoggedArgv gives the command text Linux logs, which
// %pd/%pD rewriting can change.
//
// The per-kernel differences come from the grammar.Dialect in Context;
// the kernel model supplies registers, BTF and symbols.
package fetchargs
