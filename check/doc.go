// Package check checks probe definition lines against an emulated
// tracefs of a kernel model, as `echo LINE >> FILE` would: each line on a
// fresh tracefs, or all lines in sequence on one. A result carries what
// the kernel answers (errno, error_log entry, readback, format files),
// the checks the model could not make, and hints beyond the kernel's
// message. It also reads line files as ktrace's verbs take them.
package check
