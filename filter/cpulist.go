package filter

import "github.com/ktrace-dev/ktrace/grammar"

// parseCPUList parses the text of CPUS{...} as the kernel's cpulist_parse
// (bitmap_parselist) does: comma- or blank-separated regions "N", "A-B"
// or "A-B:USED/GROUP", decimal numbers or "N" for the last CPU, every CPU
// below ncpu. It returns one bool per CPU.
func parseCPUList(s string, ncpu int) ([]bool, bool) {
	if ncpu <= 0 {
		ncpu = 1
	}
	mask := make([]bool, ncpu)
	last := uint64(ncpu - 1)
	endOfStr := func(i int) bool { return i >= len(s) || s[i] == 0 || s[i] == '\n' }
	endOfRegion := func(i int) bool { return endOfStr(i) || isSpace(s[i]) || s[i] == ',' }
	num := func(i int) (uint64, int, bool) {
		if i < len(s) && s[i] == 'N' {
			return last, i + 1, true
		}
		j := i
		for j < len(s) && isDigit(s[j]) {
			j++
		}
		if j == i {
			return 0, i, false
		}
		v, err := grammar.ParseUint32(s[i:j], 10)
		if err != nil {
			return 0, i, false
		}
		return uint64(v), j, true
	}
	i := 0
	for {
		for i < len(s) && (isSpace(s[i]) || s[i] == ',') {
			i++
		}
		if endOfStr(i) {
			return mask, true
		}
		start, j, ok := num(i)
		if !ok {
			return nil, false
		}
		end, off, group := start, uint64(0), uint64(0)
		pattern := false
		if !endOfRegion(j) {
			if s[j] != '-' {
				return nil, false
			}
			if end, j, ok = num(j + 1); !ok {
				return nil, false
			}
			if !endOfRegion(j) {
				if s[j] != ':' {
					return nil, false
				}
				if off, j, ok = num(j + 1); !ok {
					return nil, false
				}
				if j >= len(s) || s[j] != '/' {
					return nil, false
				}
				if group, j, ok = num(j + 1); !ok {
					return nil, false
				}
				pattern = true
			}
		}
		if !pattern {
			off, group = end+1, end+1
		}
		if start > end || group == 0 || off > group || end > last {
			return nil, false
		}
		for c := start; c <= end; c += group {
			for k := c; k < c+off && k <= end; k++ {
				mask[k] = true
			}
		}
		i = j
		if !pattern && !endOfStr(i) && !endOfRegion(i) {
			return nil, false
		}
	}
}
