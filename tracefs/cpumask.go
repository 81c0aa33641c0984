package tracefs

import (
	"fmt"
	"strconv"
	"strings"
	"syscall"
)

// tracing_cpumask: the CPUs whose events a trace buffer records. The
// kernel keeps a bitmap of nr_cpu_ids bits, read as "%*pb" and written
// through bitmap_parse; an event that happens on a CPU outside the mask
// is not recorded in that buffer.

// cpuMask is a bitmap of CPUs in 32-bit chunks, lowest first.
type cpuMask []uint32

// fullCPUMask has the first n bits set.
func fullCPUMask(n int) cpuMask {
	m := make(cpuMask, (n+31)/32)
	for i := 0; i < n; i++ {
		m[i/32] |= 1 << (i % 32)
	}
	return m
}

func (m cpuMask) has(cpu int) bool {
	return cpu >= 0 && cpu/32 < len(m) && m[cpu/32]&(1<<(cpu%32)) != 0
}

// format is the mask as the kernel's "%*pb" prints nbits of it: 32-bit
// chunks in hex, highest first, separated by commas; the highest chunk
// holds the bits beyond the last multiple of 32 and is zero-padded to
// their digits, the others to 8.
func (m cpuMask) format(nbits int) string {
	var b strings.Builder
	first := nbits % 32
	if first == 0 {
		first = 32
	}
	for i := (nbits+31)/32 - 1; i >= 0; i-- {
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		v := uint32(0)
		if i < len(m) {
			v = m[i]
		}
		width := 8
		if i == (nbits+31)/32-1 {
			width = (first + 3) / 4
			if first < 32 {
				v &= 1<<first - 1
			}
		}
		fmt.Fprintf(&b, "%0*x", width, v)
	}
	return b.String()
}

// isRegionEnd is the kernel's __end_of_region: a chunk separator.
func isRegionEnd(c byte) bool {
	return c == ',' || c == ' ' || (c >= '\t' && c <= '\r')
}

// parseCPUMask parses s as the kernel's bitmap_parse does for a bitmap of
// nbits bits: the text up to the first newline, read from its end as
// comma- (or blank-) separated chunks of at most 8 hex digits, the last
// chunk the lowest. EINVAL for a character that is neither a hex digit
// nor a separator, EOVERFLOW for a chunk of more than 8 digits, more
// chunks than the bitmap has, or a bit set at or beyond nbits.
func parseCPUMask(s string, nbits int) (cpuMask, error) {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	chunks := (nbits + 31) / 32
	m := make(cpuMask, chunks)
	end := len(s) - 1
	for chunk := 0; ; chunk++ {
		for end >= 0 && isRegionEnd(s[end]) {
			end--
		}
		if end < 0 {
			break
		}
		if chunk >= chunks {
			return nil, syscall.EOVERFLOW
		}
		var v uint32
		for i := 0; ; i += 4 {
			if i == 32 {
				if _, err := strconv.ParseUint(s[end:end+1], 16, 8); err == nil {
					return nil, syscall.EOVERFLOW
				}
				break
			}
			d, err := strconv.ParseUint(s[end:end+1], 16, 8)
			if err != nil {
				return nil, syscall.EINVAL
			}
			v |= uint32(d) << i
			end--
			if end < 0 || isRegionEnd(s[end]) {
				break
			}
		}
		m[chunk] = v
	}
	for cpu := nbits; cpu < chunks*32; cpu++ {
		if m.has(cpu) {
			return nil, syscall.EOVERFLOW
		}
	}
	return m, nil
}

// cpumaskText is the tracing_cpumask file.
func (f *FS) cpumaskText() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.cpuMaskLocked().format(f.cpus) + "\n"
}

// cpuMaskLocked is the buffer's CPU mask (all CPUs until one is written).
// Called with f.mu held.
func (f *FS) cpuMaskLocked() cpuMask {
	if f.cpumask == nil {
		f.cpumask = fullCPUMask(f.cpus)
	}
	return f.cpumask
}

// writeCPUMask is a write to tracing_cpumask: the whole write is the new
// mask.
func (f *FS) writeCPUMask(p []byte) (int, error) {
	m, err := parseCPUMask(string(p), f.cpus)
	if err != nil {
		return 0, err
	}
	f.mu.Lock()
	f.cpumask = m
	f.mu.Unlock()
	return len(p), nil
}

// entryCPU is the CPU a trace entry's text names (" [001] "), -1 when it
// names none.
func entryCPU(text string) int {
	for i := 0; i+4 < len(text); i++ {
		if text[i] != '[' {
			continue
		}
		j := i + 1
		for j < len(text) && text[j] >= '0' && text[j] <= '9' {
			j++
		}
		if j-i-1 >= 3 && j < len(text) && text[j] == ']' {
			n, err := strconv.Atoi(text[i+1 : j])
			if err == nil {
				return n
			}
		}
		return -1
	}
	return -1
}
