// Package synth is the kernel's synthetic events (trace_events_synth.c):
// the definitions written to synthetic_events ("NAME FIELDS") and the
// "s:[synthetic/]NAME FIELDS" lines of dynamic_events, checked in the
// kernel's order with its error codes and carets; each field's stored type,
// size and signedness; and the readback, format fields and print fmt the
// kernel shows for a synthetic event.
package synth
