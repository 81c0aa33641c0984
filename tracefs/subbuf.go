package tracefs

import (
	"strconv"
	"strings"
	"syscall"
)

// buffer_subbuf_size_kb (6.12, top level and instances) sets the size of
// the ring buffer's sub-buffers, the pages events are written in: a
// number of KiB rounded up to a power of two of 4 KiB pages, from 1 to
// 128 pages (the kernel's limit, order 7), else EINVAL. A change empties
// the buffer, and events/header_page shows the new data size. (An entry
// of trace_marker stays at most 4,054 bytes whatever the size: measured.)

// subbufMaxOrder is the largest sub-buffer order the kernel accepts.
const subbufMaxOrder = 7

// subbufText is buffer_subbuf_size_kb.
func (f *FS) subbufText() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return strconv.Itoa(4<<f.subbufOrder) + "\n"
}

// writeSubbuf is a write to buffer_subbuf_size_kb: a decimal number of
// KiB, as kstrtoul reads it.
func (f *FS) writeSubbuf(p []byte) (int, error) {
	v, err := parseUlong(p)
	if err != nil {
		return 0, err
	}
	if v == 0 || v > (4<<subbufMaxOrder) {
		return 0, syscall.EINVAL
	}
	pages := (v*1024 + 4095) / 4096
	order := 0
	for (uint64(1) << order) < pages {
		order++
	}
	f.mu.Lock()
	changed := order != f.subbufOrder
	f.subbufOrder = order
	f.mu.Unlock()
	if changed {
		// The kernel allocates new sub-buffers: what was traced goes.
		f.clearTrace()
	}
	return len(p), nil
}

// headerPageText is events/header_page, with the data size of the
// current sub-buffers.
func (f *FS) headerPageText() string {
	f.mu.Lock()
	order := f.subbufOrder
	f.mu.Unlock()
	if order == 0 {
		return f.texts.headerPage
	}
	data := strconv.Itoa((4096<<order)-16) + ";"
	return strings.Replace(f.texts.headerPage, "size:"+strconv.Itoa(bufPageSize)+";", "size:"+data, 1)
}
