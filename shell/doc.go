// Package shell is ktrace's shell: the mvdan.cc/sh interpreter with its
// working directory in an emulated tracefs, shown at /sys/kernel/tracing
// (and /sys/kernel/debug/tracing), so that scripts written for a real
// tracefs run unchanged. Redirections and the builtin cat, ls, grep, head,
// tail, wc and tee reach the emulated files with the kernel's errnos and
// busybox's words for them; other paths and commands reach the real system,
// but never name tracefs paths.
package shell
