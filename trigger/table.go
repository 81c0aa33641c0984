package trigger

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"
	"strings"

	"github.com/ktrace-dev/ktrace/filter"
	"github.com/ktrace-dev/ktrace/kernel"
)

// A histogram's contents, as a backend that counts hits keeps them, and
// their text in the hist file as the kernel prints it
// (trace_events_hist.c's hist_trigger_show over tracing_map.c's sorted
// entries).

// KeySlot is where one key field sits in a histogram's key: the kernel's
// compound key, zeroed, each field at an offset aligned to 8 bytes.
type KeySlot struct {
	Field *HistField
	// Offset is the slot's place in the key; Size is how many bytes of
	// the field's value (a u64, sign-extended from a signed field) the key
	// holds: 8 for a numeric field, alone (the kernel then uses the u64
	// itself as the key) or in a compound key (whose fields the kernel
	// copies in their slot's size, rounded up to 8: all of the u64, so
	// that an s8 of -1 prints as 18446744073709551615 there too). A
	// string slot holds up to MaxStringLen-1 bytes and a NUL.
	Offset, Size int
}

// KeyLayout is the layout of h's key and its size in bytes
// (hist_data->key_size).
func (h *Hist) KeyLayout() (slots []KeySlot, size int) {
	for _, k := range h.Keys {
		n := k.Size
		if k.Flags&(flString|flStacktrace) == 0 {
			n = 8
		}
		slots = append(slots, KeySlot{Field: k, Offset: size, Size: n})
		size += (k.Size + 7) &^ 7
	}
	if size < 8 {
		// A single key of fewer than 8 bytes still takes a u64.
		size = 8
	}
	return slots, size
}

// Entry is one key of a histogram and what was counted for it.
type Entry struct {
	Key []byte
	// Sums are the hitcount, then one sum per value field (Hist.Vals).
	Sums []uint64
	// Comm is the command of the task whose hit created the entry
	// ("<idle>" for the idle task), which common_pid.execname prints.
	Comm string
	// Track are the values the onmax() and onchange() handlers follow
	// (Hist.Tracks), Saved the fields save() kept.
	Track []uint64
	Saved []uint64
	// SavedStr are the saved strings (a string field's place in Saved
	// holds 0).
	SavedStr []string
}

// Table is a histogram's state: its entries and totals.
type Table struct {
	Entries []Entry
	// Hits counts the hits that found or created an entry; Drops those
	// whose new key did not fit (the table had Hist.Size entries).
	Hits, Drops uint64
	// Snapshot is the hit that took the last snapshot of a snapshot()
	// action (its key and comm, and the value in Track[0]); nil: none
	// taken.
	Snapshot *Entry
}

// Names resolves the names key formats print: the kernel symbol covering
// an address (.sym, .sym-offset) and a system call's name (.syscall).
// *kernel.Model is one. A nil Names prints every address and number as
// unknown.
type Names interface {
	LookupAddr(addr uint64) (kernel.Symbol, bool)
	SyscallName(nr uint64) (string, bool)
}

// Size is the most entries h's table holds (size=, rounded up to a power
// of two).
func (h *Hist) Size() int { return 1 << h.Bits }

// Text is the hist file's block of one trigger: the header, the entries
// in the kernel's order and the totals. d's kernel decides the order of
// entries that sort equal.
func (t *Trigger) Text(tab *Table, names Names, d SortVariant) string {
	var b strings.Builder
	b.WriteString("# event histogram\n#\n# trigger info: ")
	b.WriteString(t.Line())
	b.WriteString("\n#\n\n")
	n := 0
	if tab != nil {
		h := t.Hist
		slots, _ := h.KeyLayout()
		entries := h.order(tab.Entries, d)
		st := h.valStats(entries)
		for _, e := range entries {
			h.printEntry(&b, e, slots, names, st)
		}
		n = len(entries)
		if a := h.snapshotAction(); a != nil && tab.Snapshot != nil && len(tab.Snapshot.Track) > 0 {
			// track_data_snapshot_print.
			handler := "onchange"
			if a.Handler == handlerOnMax {
				handler = "onmax"
			}
			b.WriteString("\nSnapshot taken (see tracing/snapshot).  Details:\n")
			fmt.Fprintf(&b, "\ttriggering value { %s(%s) }: %10d", handler, a.VarStr, tab.Snapshot.Track[0])
			b.WriteString("\ttriggered by event with key: ")
			h.printKey(&b, tab.Snapshot, slots, names)
			b.WriteByte('\n')
		}
	}
	var hits, drops uint64
	if tab != nil {
		hits, drops = tab.Hits, tab.Drops
	}
	fmt.Fprintf(&b, "\nTotals:\n    Hits: %d\n    Entries: %d\n    Dropped: %d\n", hits, n, drops)
	return b.String()
}

// snapshotAction is the trigger's snapshot() action, if it has one.
func (h *Hist) snapshotAction() *Action {
	for _, a := range h.Actions {
		if a.Kind == actionSnapshot {
			return a
		}
	}
	return nil
}

// printEntry is hist_trigger_entry_print.
func (h *Hist) printEntry(b *strings.Builder, e *Entry, slots []KeySlot, names Names, st []valStat) {
	h.printKey(b, e, slots, names)
	if !h.NoHitcount {
		fmt.Fprintf(b, " hitcount: %10d", e.Sums[0])
	}
	for i, v := range h.Vals {
		if v.Flags&(flVar|flExpr) != 0 {
			// hist_trigger_entry_print shows no variable and no
			// expression.
			continue
		}
		sum := uint64(0)
		if i+1 < len(e.Sums) {
			sum = e.Sums[i+1]
		}
		b.WriteByte(' ')
		switch {
		case v.Flags&flPercent != 0:
			if pc := percentage(sum, st[i].total); pc == noPercent {
				fmt.Fprintf(b, " %s (%%):[ERROR]", v.name())
			} else {
				fmt.Fprintf(b, " %s (%%): %3d.%02d", v.name(), pc/100, pc%100)
			}
		case v.Flags&flGraph != 0:
			fmt.Fprintf(b, " %s: %20s", v.name(), bar(sum, st[i].max))
		case v.Flags&flHex != 0:
			fmt.Fprintf(b, " %s: %10x", v.name(), sum)
		default:
			fmt.Fprintf(b, " %s: %10d", v.name(), sum)
		}
	}
	// print_actions: each onmax() or onchange() handler's value, and
	// the fields save() kept, after each.
	tracks, saves := h.Tracks()
	for i, a := range tracks {
		var v uint64
		if i < len(e.Track) {
			v = e.Track[i]
		}
		if a.Handler == handlerOnMax {
			fmt.Fprintf(b, "\n\tmax: %10d", v)
		} else {
			fmt.Fprintf(b, "\n\tchanged: %10d", v)
		}
		for j, sv := range saves {
			if sv.Flags&flString != 0 || (sv.Field != nil && sv.Field.Class != filter.Numeric && sv.Field.Class != filter.PtrString) {
				str := ""
				if j < len(e.SavedStr) {
					str = e.SavedStr[j]
				}
				fmt.Fprintf(b, "  %s: %-32s", sv.Var, str)
				continue
			}
			var x uint64
			if j < len(e.Saved) {
				x = e.Saved[j]
			}
			fmt.Fprintf(b, "  %s: %10d", sv.Var, x)
		}
	}
	b.WriteByte('\n')
}

// valStat is a value column's total and largest sum, which .percent and
// .graph print against.
type valStat struct{ total, max uint64 }

func (h *Hist) valStats(entries []*Entry) []valStat {
	st := make([]valStat, len(h.Vals))
	for _, e := range entries {
		for i := range h.Vals {
			if i+1 < len(e.Sums) {
				v := e.Sums[i+1]
				st[i].total += v
				st[i].max = max(st[i].max, v)
			}
		}
	}
	return st
}

// noPercent is __get_percentage's answer for a value of a zero total.
const noPercent = ^uint32(0)

// percentage is __get_percentage: val/total in hundredths of a percent.
func percentage(val, total uint64) uint32 {
	if total == 0 {
		if val != 0 {
			return noPercent
		}
		return 0
	}
	if val < ^uint64(0)/10000 {
		return uint32(val * 10000 / total)
	}
	if total /= 10000; total == 0 {
		return noPercent
	}
	return uint32(val / total)
}

// bar is __fill_bar_str: 20 columns of '#' in proportion to val/max,
// padded with blanks.
func bar(val, max uint64) string {
	pc := percentage(val, max)
	if pc == noPercent {
		// snprintf into the 20-byte size: "[ERROR]" fits.
		return "[ERROR]"
	}
	n := int(uint64(pc) * 20 / 10000)
	n = min(n, 20)
	return strings.Repeat("#", n) + strings.Repeat(" ", 20-n)
}

// symbolText is %ps (name [mod]) or, with offset, %pS
// (name+0xoff/0xsize [mod]); "0x..." when no symbol covers addr.
func symbolText(names Names, addr uint64, offset bool) string {
	if names == nil {
		return fmt.Sprintf("0x%x", addr)
	}
	s, ok := names.LookupAddr(addr)
	if !ok {
		return fmt.Sprintf("0x%x", addr)
	}
	t := s.Name
	if offset {
		t += fmt.Sprintf("+0x%x/0x%x", addr-s.Addr, s.Size)
	}
	if s.Module != "" {
		t += " [" + s.Module + "]"
	}
	return t
}

// SortVariant is the kernel's lib/sort.c heapsort, whose treatment of
// equal elements decides the order of entries that sort equal.
type SortVariant int

const (
	// SortClassic pops one root per round (Linux up to 6.10).
	SortClassic SortVariant = iota
	// SortDoublePop pops two per round and ends with a final swap of
	// the last three (Linux 6.11 and later).
	SortDoublePop
)

// SortFor is the heapsort of Linux major.minor: the double-pop one from
// 6.11 (measured in the VM: 6.1.192 classic, 6.12.95 double-pop).
func SortFor(major, minor int) SortVariant {
	if major > 6 || (major == 6 && minor >= 11) {
		return SortDoublePop
	}
	return SortClassic
}

// order is tracing_map_sort_entries: detect_dups first sorts the entries
// by their key's bytes (memcmp; keys are unique, so the table's own order
// no longer matters), then they are sorted by the first sort key and runs
// of equal first keys by the second, with the kernel's heapsort, which
// decides where entries that compare equal end.
func (h *Hist) order(entries []Entry, v SortVariant) []*Entry {
	list := make([]*Entry, len(entries))
	for i := range entries {
		list[i] = &entries[i]
	}
	if len(list) < 2 {
		return list
	}
	slices.SortFunc(list, func(a, b *Entry) int { return bytes.Compare(a.Key, b.Key) })
	keys := h.sorts
	if len(keys) == 0 {
		keys = []sortKey{{idx: 0}}
	}
	heapSort(list, h.compare(keys[0]), v)
	if len(keys) > 1 {
		h.sortSecondary(list, keys[0], keys[1], v)
	}
	return list
}

// sortSecondary sorts each run of entries equal by the primary key by the
// secondary key (tracing_map.c's sort_secondary).
func (h *Hist) sortSecondary(list []*Entry, primary, secondary sortKey, v SortVariant) {
	pcmp, scmp := h.compare(primary), h.compare(secondary)
	n := len(list)
	start, nSub := 0, 1
	for i := 0; i < n-1; i++ {
		if pcmp(list[i], list[i+1]) == 0 {
			nSub++
			if i < n-2 {
				continue
			}
		}
		if nSub < 2 {
			start, nSub = i+1, 1
			continue
		}
		heapSort(list[start:start+nSub], scmp, v)
		start, nSub = i+1, 1
	}
}

// compare is cmp_entries_sum or cmp_entries_key for one sort key.
func (h *Hist) compare(k sortKey) func(a, b *Entry) int {
	sign := 1
	if k.descending {
		sign = -1
	}
	if k.idx <= len(h.Vals) {
		i := k.idx
		return func(a, b *Entry) int { return sign * cmpU64(sum(a, i), sum(b, i)) }
	}
	slots, _ := h.KeyLayout()
	s := slots[k.idx-1-len(h.Vals)]
	f := s.Field
	return func(a, b *Entry) int {
		switch {
		case f.Flags&flStacktrace != 0:
			return 0
		case f.Flags&flString != 0:
			return sign * bytes.Compare(cstr(a.Key, s), cstr(b.Key, s))
		}
		return sign * cmpNum(keyBytes(a.Key, s), keyBytes(b.Key, s), f)
	}
}

func sum(e *Entry, i int) uint64 {
	if i < len(e.Sums) {
		return e.Sums[i]
	}
	return 0
}

func cmpU64(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// keyBytes is a numeric key's value as tracing_map_cmp_num reads it: the
// field's size from the slot's start.
func keyBytes(key []byte, s KeySlot) uint64 {
	var buf [8]byte
	if s.Offset < len(key) {
		copy(buf[:], key[s.Offset:min(len(key), s.Offset+8)])
	}
	return binary.LittleEndian.Uint64(buf[:])
}

// cmpNum compares two key values by the event field's size and
// signedness. A key that reads no event field (an expression, the CPU)
// compares by its slot's size, all 8 bytes, signed as the expression's
// first operand: the kernel picks the comparison by the event field when
// there is one, else by the key field, whose size it has rounded up to 8
// (c8*2 of an s8 c8 sorts -112, -2, 2, 200, not by the low byte).
func cmpNum(a, b uint64, f *HistField) int {
	size := f.Size
	if size <= 0 || size > 8 || f.Field == nil {
		size = 8
	}
	sh := uint(64 - 8*size)
	if f.Signed && f.Flags&flCPU == 0 {
		x, y := int64(a<<sh)>>sh, int64(b<<sh)>>sh
		switch {
		case x < y:
			return -1
		case x > y:
			return 1
		}
		return 0
	}
	return cmpU64(a<<sh>>sh, b<<sh>>sh)
}

func cstr(key []byte, s KeySlot) []byte {
	end := min(s.Offset+s.Field.Size, len(key))
	if s.Offset >= end {
		return nil
	}
	str := key[s.Offset:end]
	if i := bytes.IndexByte(str, 0); i >= 0 {
		str = str[:i]
	}
	return str
}

// heapSort is lib/sort.c's bottom-up heapsort in variant v, comparisons
// and swaps included as the kernel makes them, so that elements that
// compare equal end where the kernel's sort leaves them.
func heapSort(x []*Entry, cmp func(a, b *Entry) int, v SortVariant) {
	n := len(x)
	a := n / 2
	if a == 0 {
		return
	}
	parent := func(i int) int { return (i - 1) / 2 }
	// The classic variant sifts towards the larger child when the
	// children compare >= 0, the double-pop one when > 0.
	childLeft := func(c, d int) bool { return cmp(x[c], x[d]) >= 0 }
	if v == SortDoublePop {
		childLeft = func(c, d int) bool { return cmp(x[c], x[d]) > 0 }
	}
	shift := 0
	for {
		switch {
		case a > 0:
			a -= 1 << shift
		case v == SortClassic && n > 1:
			n--
			x[0], x[n] = x[n], x[0]
		case v == SortDoublePop && n > 3:
			n--
			x[0], x[n] = x[n], x[0]
			shift = 0
			if cmp(x[1], x[2]) <= 0 {
				shift = 1
			}
			a = 1 << shift
			n--
			x[a], x[n] = x[n], x[a]
		default:
			if v == SortDoublePop {
				n--
				x[0], x[n] = x[n], x[0]
				if n == 2 && cmp(x[0], x[1]) > 0 {
					x[0], x[1] = x[1], x[0]
				}
			}
			return
		}
		b := a
		var c, d int
		for {
			c = 2*b + 1
			d = c + 1
			if d >= n {
				break
			}
			if childLeft(c, d) {
				b = c
			} else {
				b = d
			}
		}
		if d == n {
			b = c
		}
		for b != a && cmp(x[a], x[b]) >= 0 {
			b = parent(b)
		}
		c = b
		for b != a {
			b = parent(b)
			x[b], x[c] = x[c], x[b]
		}
	}
}

// printKey is hist_trigger_print_key: "{ KEY: VALUE, ... }".
func (h *Hist) printKey(b *strings.Builder, e *Entry, slots []KeySlot, names Names) {
	b.WriteString("{ ")
	multiline := false
	for i, s := range slots {
		if i > 0 {
			b.WriteString(", ")
		}
		f := s.Field
		name := f.name()
		var u uint64
		if s.Offset+8 <= len(e.Key) {
			u = binary.LittleEndian.Uint64(e.Key[s.Offset:])
		}
		switch {
		case f.Flags&flHex != 0:
			fmt.Fprintf(b, "%s: %x", name, u)
		case f.Flags&flSym != 0:
			fmt.Fprintf(b, "%s: [%x] %-45s", name, u, symbolText(names, u, false))
		case f.Flags&flSymOffset != 0:
			fmt.Fprintf(b, "%s: [%x] %-55s", name, u, symbolText(names, u, true))
		case f.Flags&flSyscall != 0:
			call := "unknown_syscall"
			if names != nil {
				if n, ok := names.SyscallName(u); ok {
					call = n
				}
			}
			fmt.Fprintf(b, "%s: %-30s[%3d]", name, call, u)
		case f.Flags&flExecname != 0:
			comm := e.Comm
			if u == 0 {
				// save_comm names the idle task so.
				comm = "<idle>"
			}
			fmt.Fprintf(b, "%s: %-16s[%10d]", name, comm, u)
		case f.Flags&flStacktrace != 0:
			if f.Name != "" {
				b.WriteString(f.Name + ".stacktrace")
			} else {
				b.WriteString(name + ":\n")
			}
			for off := s.Offset; off+8 <= s.Offset+f.Size && off+8 <= len(e.Key); off += 8 {
				pc := binary.LittleEndian.Uint64(e.Key[off:])
				if pc == 0 {
					break
				}
				b.WriteString("         " + symbolText(names, pc, true) + "\n")
			}
			multiline = true
		case f.Flags&flLog2 != 0:
			fmt.Fprintf(b, "%s: ~ 2^%-2d", name, u)
		case f.Flags&flBucket != 0:
			fmt.Fprintf(b, "%s: ~ %d-%d", name, u, u+f.Buckets-1)
		case f.Flags&flString != 0:
			end := min(s.Offset+f.Size, len(e.Key))
			str := e.Key[s.Offset:end]
			if i := bytes.IndexByte(str, 0); i >= 0 {
				str = str[:i]
			}
			fmt.Fprintf(b, "%s: %-50s", name, str)
		default:
			fmt.Fprintf(b, "%s: %10d", name, u)
		}
	}
	if !multiline {
		b.WriteByte(' ')
	}
	b.WriteByte('}')
}
