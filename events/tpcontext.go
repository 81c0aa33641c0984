package events

// TracepointContext is the common_flags and common_preempt_count the
// kernel records with a tracepoint event's records where they are known
// whatever the context (0, 0 elsewhere: a BPF program cannot read them).
// The syscall events take the depth their tracepoint runs at
// (ftrace_syscall_enter and _exit use tracing_gen_ctx, where other events
// discount the tracepoint's own preempt_disable): "...1."; sched_switch
// runs with interrupts off under the runqueue's lock: "d..2."; a few
// more run under the same locks wherever they come from. Seen on 6.1.192
// and 6.12.95.
func TracepointContext(system, name string) (flags, preempt uint8) {
	switch {
	case system == "syscalls":
		return 0, 1
	case system == "sched" && name == "sched_switch":
		return 0x01, 2 // TRACE_FLAG_IRQS_OFF
	case system == "sched" && name == "sched_wakeup_new":
		// Under the task's pi_lock (irqsave) and its runqueue's lock.
		return 0x01, 2
	case system == "signal" && name == "signal_deliver":
		// Under the siglock (spin_lock_irq).
		return 0x01, 1
	case system == "task" && name == "task_rename":
		// Under task_lock.
		return 0, 1
	}
	return 0, 0
}

// AboutCurrentTask reports whether the tracepoints of system record only
// the work of the task they run in (system calls). A tracer's own hits
// on them are its own doing, where its hits on sched_waking or
// sched_switch record what happens to other tasks as well.
func AboutCurrentTask(system string) bool {
	return system == "syscalls" || system == "raw_syscalls"
}
