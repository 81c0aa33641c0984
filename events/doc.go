// Package events is ktrace's model of the kernel's dynamic probe events: the
// registry behind kprobe_events and dynamic_events. It runs each written line
// through the kernel's create flow (trace_kprobe's and trace_fprobe's create
// functions, in their order of checks), keeps the events and their probes,
// and renders what the kernel renders: the control files' readback, the
// events/GROUP/EVENT/format files and error_log entries with the kernel's
// errno, message and caret position.
//
// Modelled: kprobes and kretprobes (kprobe_events and dynamic_events) and,
// on kernels whose dialect has them, fprobes and tracepoint probes
// (dynamic_events). Uprobe, eprobe and synthetic-event lines are not: the
// registry treats them like a line no front end claims (EINVAL, nothing
// logged), where Linux would create or reject them. The per-argument
// parsing is the fetchargs package's; what the kernel would do when it arms
// a probe comes from the kernel package's model.
package events
