// Package tracer is ktrace's eBPF tracing backend. It compiles the probe
// events of an events.Registry into eBPF programs (bpfcode.Compile, one
// BPF_PROG_TYPE_KPROBE program per probe point, plus an entry program for
// return probes that use function arguments; probes of one shape at
// function entries share one program and one kprobe-multi link, the
// attach cookie naming the probe), attaches them with
// cilium/ebpf's link package, reads their records from one BPF ring buffer
// and prints them the way the kernel's trace file does.
//
// Attaching (Open):
//   - p events: link.Kprobe on SYMBOL+OFFSET (the module prefix of MOD:SYM
//     is dropped, the kernel's lookup finds module symbols; address probes
//     attach as FUNC+OFFSET of the function holding the address);
//   - r events: link.Kretprobe through the perf kprobe PMU when maxactive
//     is the kernel's default; another maxactive makes cilium/ebpf create
//     the kretprobe through tracefs in group "ktrace_<pid>_<random>",
//     which would survive a killed process: a reaper process started
//     first (Config.Reaper, StartReaper) removes those groups when this
//     process dies, and CleanStale (which record and the live backend call
//     before attaching) removes any left by a
//     process that had none;
//   - f events: kprobe-multi links (Config.KprobeMulti, kernels with
//     CONFIG_FPROBE such as 6.12), else one kprobe or kretprobe;
//   - t events: raw tracepoint links; the program reads the tracepoint's
//     arguments from its context (the kernel's t events read them through
//     an fprobe on the tracepoint's __probestub_ function, whose entry is
//     the "(ip)" of every hit; ktrace records that address).
//
// Everything else is a file descriptor of the process: when it exits or is
// killed, the kernel removes the probes (checked in the VM with kill -9).
//
// Records (see fetchargs/layout.go) are the kernel's records behind
// a 40-byte ktrace header (time, CPU, probe, comm, process id). Decoder
// prints them as the kernel's trace_print_context and print_probe_args do.
// Known differences from the kernel's trace file, all outside the event
// body that the VM tests compare:
//   - the timestamp is bpf_ktime_get_ns (CLOCK_MONOTONIC), not the trace
//     clock;
//   - the flags column shows only irqs-off (from the probed context's
//     EFLAGS); need-resched, hard/soft irq and the preempt depth are not
//     visible to eBPF and print as '.';
//   - strings longer than their slot (4096 bytes for up to six strings,
//     fewer bytes per string for probes with more) are cut.
//
// A failed read prints as the kernel prints it: "(fault)" for a string,
// and 0 for a number (the kernel leaves its ring buffer's stale bytes).
package tracer
