// Package live is the live backend of ktrace's emulated tracefs: the
// bridge between tracefs and the tracer. The event registry decides what
// the control files accept; enabling an event attaches its probes to one
// eBPF session shared by every enabled event, whose records go into the
// tracefs trace ring, and kprobe_profile shows their counts.
package live
