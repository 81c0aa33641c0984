// Package filter is the kernel's event-filter language: the expressions
// written to events/GROUP/EVENT/filter, to a group's filter and after "if"
// in triggers ("common_pid != 0 && comm ~ \"ba*\"").
//
// Parse checks an expression against an event's fields (read from its
// format file, FieldsFromFormat) the way kernel/trace/trace_events_filter.c
// does, with the same errno, error code and caret position on each pinned
// kernel, and returns a Filter: a typed tree of the expression (for
// printing and compiling) and the kernel's branch program over its
// predicates (for evaluating). Match runs the program on a record exactly
// as filter_match_preds does, including the kernel's quirks (a static
// string's "ends with" looks at the end of the buffer, not of the string;
// a field of an unusual size never matches).
package filter
