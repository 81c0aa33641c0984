// Package catalog tells what can be probed on a kernel model, and how:
// a function's BTF signature with, for each parameter, the fetch argument
// that reads it, its register and the type the kernel gives it (ktrace
// args); a tracepoint's fields and the arguments a t event reads; and the
// functions and tracepoints matching globs, each with the kernel's verdict
// for every probe kind (ktrace funcs). Verdicts come from the same checks
// a definition line goes through, so a listing never promises a probe the
// kernel refuses.
package catalog
