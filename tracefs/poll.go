package tracefs

// poll(2) event bits as Linux defines them on x86 (and as FUSE carries
// them).
const (
	PollIn     = 0x1
	PollPri    = 0x2
	PollOut    = 0x4
	PollRdNorm = 0x40
	PollWrNorm = 0x100
)

// DefaultPollMask is what poll(2) reports for a file whose kernel file
// has no poll method: always readable and writable. Every tracefs file
// but trace_pipe and (on 6.12) the hist files is one.
const DefaultPollMask = PollIn | PollOut | PollRdNorm | PollWrNorm

// Poll answers poll(2) on the open file, as the kernel's file of that
// name does:
//   - trace_pipe is readable when its buffer holds an entry (or the block
//     option is set); buffer_percent plays no part (measured on 6.1 and
//     6.12);
//   - a hist file, on kernels whose hist files poll (6.12), is readable
//     (POLLIN) when its event's histograms counted a hit since the file
//     was last read, and has POLLPRI when they counted one since the last
//     poll of the file (or its open); that poll takes the count;
//   - every other file is always ready (DefaultPollMask).
//
// The answer is the whole mask; the caller keeps the events it asked for.
// A poller that got no event waits for PollReady to turn true.
func (h *File) Poll() uint32 {
	switch {
	case h.n.kind == nTracePipe:
		if h.fs.optionOn("block") {
			return PollIn | PollRdNorm
		}
		h.fs.sync()
		if h.pipeReady() {
			return PollIn | PollRdNorm
		}
		return 0
	case h.n.kind == nEvHist && h.fs.texts.histPoll:
		hits := h.fs.histHits(h.n)
		h.mu.Lock()
		defer h.mu.Unlock()
		var ev uint32
		if h.lastRead != hits {
			ev |= PollIn | PollRdNorm
		}
		if h.lastAct != hits {
			h.lastAct = hits
			ev |= PollPri
		}
		return ev
	}
	return DefaultPollMask
}

// PollReady reports whether a Poll now would report one of events: the
// check of a poller that waits (the kernel wakes it when an entry is
// written to the buffer, or when a histogram counts a hit). It changes
// nothing, and it does not ask the backend to pass on what it holds: the
// backend does that on its own, and a waiter checks again soon.
func (h *File) PollReady(events uint32) bool {
	switch {
	case h.n.kind == nTracePipe:
		return events&(PollIn|PollRdNorm) != 0 && (h.fs.optionOn("block") || h.pipeReady())
	case h.n.kind == nEvHist && h.fs.texts.histPoll:
		hits := h.fs.histHits(h.n)
		h.mu.Lock()
		defer h.mu.Unlock()
		return (events&(PollIn|PollRdNorm) != 0 && h.lastRead != hits) ||
			(events&PollPri != 0 && h.lastAct != hits)
	}
	return events&DefaultPollMask != 0
}

// pipeReady reports whether a trace_pipe read would find text at once.
func (h *File) pipeReady() bool {
	h.mu.Lock()
	pending := len(h.pipe) > 0
	h.mu.Unlock()
	if pending {
		return true
	}
	f := h.fs
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.ring.entries) > 0
}

// histHits is the kernel's get_hist_hit_count for the event of a hist
// file: the hits its histograms counted, summed over its hist triggers
// (0 without a backend that counts).
func (f *FS) histHits(n node) uint64 {
	hb, ok := f.b.(HistBackend)
	if !ok {
		return 0
	}
	e, ok := f.findEventAny(f.b.Events(), n.group, n.event)
	if !ok {
		return 0
	}
	var sum uint64
	for _, t := range f.triggerList(e).Triggers {
		if t.Hist != nil {
			sum += hb.HistHits(e.Group, e.Name, t)
		}
	}
	return sum
}
