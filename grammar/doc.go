// Package grammar is the syntax of probe-definition lines: the participle
// grammar of each construct (syntax.go: the command head, event names,
// kprobe, fprobe, tracepoint, uprobe and event-probe places, removals;
// fetcharg.go: fetch arguments and their types), the lexers that cut an
// argv entry where the kernel's strchr() scans do (lexer.go), the engine
// that runs the grammar's tags (engine.go; participle's own parser builds
// the same trees, more slowly), the kernel's checks over the parsed constructs
// in the kernel's order (check.go; fetchargs checks the arguments),
// splitting a line into argv, the kernel's number parsing (kstrtox), the
// per-release dialect table, and the one table of error_log codes and
// messages (with the hints beside it) that every check reports through.
package grammar
