// Package kernel models the parts of a Linux kernel that decide whether a
// kprobe or fprobe definition is accepted: the symbol table (kallsyms), the
// kprobe blacklist, the ftrace-able function list, the build configuration,
// the release, the CPU count, the architecture's register layout and the
// kernel's BTF.
//
// A Model is built from a snapshot directory (LoadSnapshot), from the running
// system (LoadHost) or from the 6.12 snapshot compiled into ktrace
// (Embedded). Symbol lookups are hash based and loading BTF or the kernel
// image is deferred until first use, so validating probe lines against a
// model stays cheap.
//
// On top of the raw tables the model predicts what registering a probe
// does (CheckProbeAddress, KprobeOnFuncEntry, ResolveKprobe, CheckFprobe):
// the notrace, blacklist, patch-site and instruction-boundary rules of the
// kernel, with the error_log code and errno each failure produces, as
// verified on the pinned 6.1 and 6.12 kernels. The instruction-level rules
// need the kernel text: a snapshot's vmlinuz, for the embedded snapshot a
// table computed from it at generation time (TextTable), and for the
// running kernel its own text, read through /proc/kcore or a BPF program
// (TextReader).
//
// The host model needs only what a running kernel exposes: /proc,
// /sys/kernel/btf, tracefs and, where mounted, debugfs. A build
// configuration and an image are extra evidence, never required; every
// fact the model holds records where it came from (Facts).
package kernel
