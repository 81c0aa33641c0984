package tracer

import (
	"errors"
	"time"

	"github.com/cilium/ebpf/ringbuf"
)

// RunHandler is what Session.Run calls; nil fields are skipped.
type RunHandler struct {
	// Record handles one decoded record (aliasing a buffer the next read
	// reuses); returning false ends the run at once.
	Record func(r *Record) bool
	// Undecodable is told of a record the decoder refused.
	Undecodable func(err error)
	// Idle runs when the ring buffer holds nothing more: after a wait
	// that timed out (timedOut), and after a record that left it empty.
	Idle func(timedOut bool)
	// BeforeWait runs before each wait for a record.
	BeforeWait func()
	// Flushed runs when the records that were in the ring buffer when
	// Flush was called have all been handled.
	Flushed func()
}

// Run is the one loop that takes records off a session's ring buffer. It
// handles records as they come, waiting at most poll for each, until stop
// is closed; then it handles what the ring buffer still holds, without
// waiting, for at most drain (0: until it is empty). It reports whether it
// ended because stop was closed (false: a handler ended it, or the reader
// was closed).
func (s *Session) Run(stop <-chan struct{}, poll, drain time.Duration, h RunHandler) bool {
	stopping := false
	var drainUntil time.Time
	for {
		if !stopping {
			select {
			case <-stop:
				stopping = true
				drainUntil = time.Now().Add(drain)
			default:
			}
		}
		deadline := time.Now().Add(poll)
		if stopping {
			// A past deadline reads what is buffered, then times out.
			deadline = time.Now()
		}
		if h.BeforeWait != nil {
			h.BeforeWait()
		}
		r, err := s.Next(deadline)
		switch {
		case errors.Is(err, ErrTimeout):
			if h.Idle != nil {
				h.Idle(true)
			}
			if stopping {
				return true
			}
			continue
		case errors.Is(err, ErrFlushed):
			if h.Flushed != nil {
				h.Flushed()
			}
			continue
		case errors.Is(err, ringbuf.ErrClosed):
			return stopping
		case err != nil:
			if h.Undecodable != nil {
				h.Undecodable(err)
			}
			continue
		}
		if h.Record != nil && !h.Record(&r) {
			return false
		}
		if h.Idle != nil && s.Buffered() == 0 {
			h.Idle(false)
		}
		if stopping && drain > 0 && time.Now().After(drainUntil) {
			return true
		}
	}
}
