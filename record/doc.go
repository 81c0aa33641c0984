// Package record runs one recording: it attaches a set of events to the
// running kernel through one tracer session, optionally runs a command
// and follows it, streams every hit to a writer as the kernel's trace
// file prints it (or as JSON), marks where the ring buffer lost events,
// stops on cancel, duration, count or the command's exit, detaches,
// drains the ring (all of it: nothing is added once detached), and
// returns the per-event summary.
package record
