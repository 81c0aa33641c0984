package tracefs

// Under options/event-fork, set_event_pid and set_event_notrace_pid
// follow the tasks on them, as the kernel's sched_process_fork and
// sched_process_free probes make them (trace_event_follow_fork): a child
// forked by a task on a list joins that list, and a freed task leaves
// both. The kernel does it where the fork happens; ktrace needs a backend
// that reports forks and frees in order with the records it passes on
// (TaskFollower), so that a child's first events find it on the list.

// TaskFollower is a backend that reports forks and freed tasks
// (FS.TaskForked, FS.TaskFreed) while FollowTasks(true) is in force.
type TaskFollower interface {
	FollowTasks(on bool) error
}

// TaskForked tells the FS that task parent forked child.
func (f *FS) TaskForked(parent, child int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.optionOnLocked("event-fork") {
		return
	}
	if f.eventPids[parent] {
		f.eventPids[child] = true
	}
	if f.eventNoPids[parent] {
		f.eventNoPids[child] = true
	}
}

// TaskFreed tells the FS that task pid is gone.
func (f *FS) TaskFreed(pid int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.optionOnLocked("event-fork") {
		return
	}
	delete(f.eventPids, pid)
	delete(f.eventNoPids, pid)
}

// followTasks tells the backend whether the lists follow forks now.
func (f *FS) followTasks(on bool) error {
	if tf, ok := f.b.(TaskFollower); ok {
		return tf.FollowTasks(on)
	}
	return nil
}
