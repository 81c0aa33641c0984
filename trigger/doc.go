// Package trigger is the kernel's event triggers: the commands written to
// events/GROUP/EVENT/trigger (traceon, traceoff, snapshot, stacktrace,
// enable_event, disable_event, enable_hist, disable_hist and hist), parsed
// as kernel/trace/trace_events_trigger.c and trace_events_hist.c parse
// them, with the kernel's errnos and error_log entries, and the texts of
// the trigger and hist files.
//
// A List holds one event's triggers in the kernel's order (new non-hist
// triggers first, hist triggers appended). Write applies one write(2) of
// the trigger file to it.
package trigger
