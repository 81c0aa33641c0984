// Package vmtest boots the pinned Linux kernels under qemu and runs a shell
// script (and any static binaries it needs) inside them, so that tests can
// check ktrace's emulation against what Linux really does.
//
// A guest is an initramfs built in pure Go: a static busybox with its applet
// symlinks, the caller's files, and an /init that mounts proc, sysfs,
// devtmpfs, tracefs and debugfs, changes to /sys/kernel/tracing and runs the
// script. The script's output travels over the second serial port, so kernel
// messages on the console never mix with results.
package vmtest
