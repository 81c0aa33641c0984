package events

// TracepointContext is the common_flags and common_preempt_count the
// kernel records with a tracepoint event's records where they are known
// whatever the context (0, 0 elsewhere: a BPF program cannot read them).
// The syscall events take the depth their tracepoint runs at
// (ftrace_syscall_enter and _exit use tracing_gen_ctx, where other events
// discount the tracepoint's own preempt_disable): "...1."; sched_switch
// runs with interrupts off under the runqueue's lock: "d..2.". Seen on
// 6.1.192 and 6.12.95.
func TracepointContext(system, name string) (flags, preempt uint8) {
	switch {
	case system == "syscalls":
		return 0, 1
	case system == "sched" && name == "sched_switch":
		return 0x01, 2 // TRACE_FLAG_IRQS_OFF
	}
	return 0, 0
}
