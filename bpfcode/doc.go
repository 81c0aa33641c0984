// Package bpfcode compiles a probe's fetch programs (Arg.Ops) into one eBPF
// program of type BPF_PROG_TYPE_KPROBE that writes the event's record (see
// fetchargs.Layout) and sends it through a BPF ring buffer.
//
// Runtime behaviour, matching the kernel's trace_probe_tmpl.h where eBPF
// allows:
//   - A failed dereference (DEREF/UDEREF) aborts the argument: a number
//     field reads 0 (the kernel leaves whatever its ring buffer held), a
//     string reads as "(fault)" (data_loc length 0). A failed ST_MEM or
//     ST_UMEM read leaves 0 (bpf_probe_read zeroes its destination), a
//     failed string read has length 0, i.e. "(fault)", as in the kernel.
//   - $stackN outside the stack reads 0, like regs_get_kernel_stack_nth.
//   - On x86_64 a kernel read (DEREF, ST_MEM, ST_STRING) of an address
//     below TASK_SIZE reads user memory, as the kernel's probe_mem_read and
//     fetch_store_string do on architectures with separate address spaces.
//   - common_flags carries TRACE_FLAG_IRQS_OFF (0x01) when the probed
//     context ran with interrupts disabled (EFLAGS.IF clear in pt_regs;
//     for a static event, taken by a kprobe where the perf path hands its
//     record to BPF); with a CPUContext the other flag bits and
//     common_preempt_count come from the CPU's preempt count, as
//     tracing_gen_ctx computes them (context.go).
//   - A ring buffer that is full counts a miss for the probe; every run
//     counts a hit.
//
// The stages live in their own files: program.go (the program's frame:
// prologue, record header, output), args.go (argument loads and
// dereferences), strings.go (strings and their __data_loc words),
// entry.go (the entry half of return probes that save arguments) and
// emit.go (instruction plumbing).
package bpfcode
