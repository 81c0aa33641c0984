// Package fusefs serves a ktrace tracefs (package tracefs) as a real
// filesystem over FUSE, so that any program (bash, dash, busybox, Python,
// existing ftrace scripts) can drive the emulated kprobe tracer with plain
// open/read/write calls, as it would /sys/kernel/tracing.
//
// One write(2) to a control file reaches tracefs as one write, so a rejected
// probe definition fails that write with the kernel's errno and adds its
// error_log entry. Files are served with FOPEN_DIRECT_IO (their content is
// generated on read and changes with every write, so the page cache must
// stay out of the way) and every attribute expires at once. Entries expire
// at once too, so the events/ tree follows the registry, except those of
// paths that exist for the life of the mount (tracefs.FS.Stable: the root's
// files, options, the static events' tree), which the kernel may keep for
// an hour: a script walking events/*/*/ then costs no LOOKUP per file.
//
// Two FUSE details shape the write path:
//
//   - Linux's FUSE client does not pass O_TRUNC to the server unless the
//     server asks for atomic O_TRUNC, which go-fuse does not; an O_TRUNC open
//     arrives as OPEN followed by SETATTR(size=0). The SETATTR runs the
//     truncation (clear kprobe_events or dynamic_events, EBUSY when an event
//     in scope is enabled; clear error_log), and its error is what open(2)
//     returns. A plain truncate(2) of a control file takes the same path and
//     so also clears it, where the kernel would leave the events alone.
//   - A write(2) larger than the FUSE request limit (MaxWrite, 128 KiB, less
//     when the user buffer is not page aligned) reaches the server as several
//     requests. The kernel's trace_parse_run_command runs each write(2) on its
//     own and executes a trailing line without a newline as a complete line.
//     fusefs cannot see write(2) boundaries, so a request at least
//     MaxWrite-PageSize bytes long that does not end in a newline is taken to
//     be a piece of a larger write: its unfinished last line is held back and
//     prepended to the next request on that handle, or executed when the
//     handle is flushed (close(2) then reports its error). Smaller requests
//     are exactly one write(2) each and are executed as the kernel would.
//
// Permissions: every file and directory has the mode, owner and group the
// tracefs tree gives it (the kernel's modes, the mounting user where the
// kernel shows root, tracefs's uid=, gid= and mode= options), and the mount
// uses default_permissions, so the kernel's VFS checks them on every
// access, as it does on tracefs: with allow_other, other users get what the
// modes grant them (on a mount without options, nothing: the root
// directory is drwx------). Without allow_other FUSE itself lets only the
// mounting user in.
//
// File sizes: tracefs reports size 0 for every file, and so does the mount
// for directories. Regular files are the exception, because common readers
// would break otherwise: Linux's FUSE client serves sendfile(2) and
// splice(2) from the page cache even for a file opened with
// FOPEN_DIRECT_IO, and stops at the inode size without asking the server.
// busybox cat (sendfile first) and Python's shutil.copyfile then read
// nothing from a file of size 0 (measured on Linux 6.18), where on tracefs
// they get its text. So a regular file's size on the mount is the length
// of its content at the time of the stat (the page-cache read then gets
// all of it), and `test -s FILE` is true for a non-empty file here, where
// on tracefs it is always false. trace_pipe, whose reads consume, has one
// page instead: see streamGuard.
//
// trace_pipe is a stream (FOPEN_STREAM): a read(2) of it is one consuming
// read that waits, as on the kernel's tracefs, while events are enabled and
// nothing is recorded (when the tracefs was made with PipeBlocks, over a
// backend that records). It runs outside the lock that orders the other
// requests, so writes that enable or remove events go on meanwhile; a
// signal to the reader ends its wait with EINTR (the FUSE client's
// interrupt request), and tracefs.FS.Shutdown ends every wait with end of
// file, for unmounting. Its size is one page, not 0: see streamGuard for
// sendfile(2). Without a probe backend tracefs never records events and
// trace_pipe reads end at once (end of file), where the kernel would block
// until an event comes.
//
// A Go program that serves a mount must not start a child process whose
// working directory is inside that mount (exec.Cmd.Dir): the child touches
// the mount before exec while the parent's runtime may be stopped waiting
// for it, and both hang. Start the child elsewhere and let it change
// directory itself.
package fusefs
