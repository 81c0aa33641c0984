// Package tracefs is an in-memory tracefs: the probe-related files of
// /sys/kernel/tracing with the kernel's file semantics, backed by a model
// of the probe events (Backend). Writing a probe definition to kprobe_events
// or dynamic_events succeeds or fails exactly as on Linux, rejected commands
// land in error_log, and the events/ tree lists the events with their enable,
// id and format files.
//
// The API is front-end neutral (Open/Stat/ReadDir and file handles with
// Read/Write/Close, errors as syscall.Errno) so the same FS can back ktrace's
// shell, its CLI and a FUSE mount. An FS is safe for concurrent use.
//
// Files and directories have the modes of the model's release (events/
// directories are drwxr-x--- on 6.1 and drwxr-xr-x on 6.12), owned by
// Options.Root where the kernel shows root, and follow tracefs's mount
// options uid=, gid= and mode= (Options.Mount). The FS itself checks no
// permissions: its user is root; a front end that serves other users
// (package fusefs) enforces the modes.
//
// A backend that attaches real probes feeds the trace ring through
// FS.Record: trace shows the entries under the kernel's header, trace_pipe
// consumes them, a truncating open of trace clears them and tracing_on 0
// stops recording. Without one nothing is ever recorded: trace shows only
// its header, trace_pipe reads end immediately (the kernel would block
// waiting for events that cannot come) and every hit counter stays zero.
package tracefs
