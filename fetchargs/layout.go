package fetchargs

import "fmt"

// Record layout shared by the eBPF compiler (package bpfcode) and ktrace's
// record decoder (package tracer).
//
// Every record a compiled program sends through the ring buffer is a
// 40-byte ktrace header followed by the event's record exactly as the
// kernel's format file lays it out:
//
//	header (ktrace only, not part of the kernel record):
//	  +0  u64 timestamp (bpf_ktime_get_ns, CLOCK_MONOTONIC)
//	  +8  u32 CPU
//	  +12 u32 probe index (which compiled probe sent it)
//	  +16 char[16] comm of the current task (the kernel's trace output
//	      takes it from its saved_cmdlines table)
//	  +32 u32 thread group id (process id) of the current task
//	  +36 u32 zero
//	record (as events/GROUP/EVENT/format says):
//	  +0  u16 common_type (event ID)
//	  +2  u8  common_flags
//	  +3  u8  common_preempt_count
//	  +4  s32 common_pid
//	  +8  __probe_ip, or __probe_func and __probe_ret_ip for return kinds
//	  then each argument at its offset, packed without alignment
//	  then the dynamic area holding strings, addressed by __data_loc
//	  words ((len << 16) | offset from the record start).
//
// The dynamic area differs from the kernel's in two documented ways: each
// string has its own fixed-size slot (the kernel packs them back to back;
// the __data_loc words say where each string is, so decoding is the same),
// and a symstr argument's slot holds the raw 8-byte address with length 8
// (the kernel stores the "sym+0xoff/0xsize [mod]" text), which the decoder
// symbolises.
const (
	// HeaderSize is the size of ktrace's per-record header.
	HeaderSize = 40
	// maxStringSize is the kernel's MAX_STRING_SIZE (PATH_MAX).
	maxStringSize = 4096
	// dynBudget bounds the dynamic area of one record so that every offset
	// in the scratch value fits an eBPF instruction's 16-bit offset: up to
	// six strings get the kernel's full 4096 bytes, probes with more get
	// shorter slots (at least minStringSlot bytes; the fixed part's 3072
	// bytes hold at most 768 __data_loc words).
	dynBudget     = 24 << 10
	minStringSlot = 32
)

// Layout is where a probe's record puts each argument.
type Layout struct {
	Return    bool  // kretprobe/fexit: __probe_func and __probe_ret_ip
	ArgsStart int   // offset of the first argument (16, or 24 for return kinds)
	Offsets   []int // per argument: offset of its field in the record
	Fixed     int   // size of the fixed part (header fields and arguments)
	Strings   int   // number of string slots (a string array counts each element)
	StrSlot   int   // bytes per string slot (strings longer than StrSlot-1 are cut)
	// SlotOf gives, per argument, the index of its first string slot (-1
	// for non-string arguments).
	SlotOf []int
	// EntrySlots are the function arguments a return probe saves at entry
	// (EntryArgs), slot i at byte 8*i, and EntryIPSlot.
	EntrySlots []int
}

// EntryIPSlot is the entry slot of the address a probe was hit at: what a
// uretprobe's record names as the function ("(RET <- FUNC)") and what its
// @+FILE_OFFSET reads relative to.
const EntryIPSlot = -1

// NewLayout computes the record layout of a probe with these arguments.
func NewLayout(args []*Arg, ret bool) (*Layout, error) {
	l := &Layout{Return: ret, ArgsStart: 16}
	if ret {
		l.ArgsStart = 24
	}
	off := l.ArgsStart
	for _, a := range args {
		if a == nil || a.Type == nil {
			return nil, fmt.Errorf("fetchargs: layout: argument without a type")
		}
		l.Offsets = append(l.Offsets, off)
		off += a.Size
		if a.Type.IsString {
			l.SlotOf = append(l.SlotOf, l.Strings)
			n := a.Count
			if n == 0 {
				n = 1
			}
			l.Strings += n
		} else {
			l.SlotOf = append(l.SlotOf, -1)
		}
	}
	l.Fixed = off
	l.StrSlot = maxStringSize
	if l.Strings > 0 && l.Strings*maxStringSize > dynBudget {
		s := dynBudget / l.Strings &^ 7
		if s < minStringSlot {
			s = minStringSlot
		}
		l.StrSlot = s
	}
	l.EntrySlots = EntryArgs(args)
	return l, nil
}

// SlotOffset is the record offset of string slot i.
func (l *Layout) SlotOffset(i int) int { return l.Fixed + i*l.StrSlot }

// RecordSize is the largest record (without ktrace's header).
func (l *Layout) RecordSize() int { return l.Fixed + l.Strings*l.StrSlot }

// ScratchSize is the per-CPU scratch value a program builds its record in:
// header, record, and the entry-data copy of return probes.
func (l *Layout) ScratchSize() int {
	return HeaderSize + l.RecordSize() + 8*len(l.EntrySlots)
}
