package tracer

import (
	"errors"
	"time"
)

// RunHandler is what Session.Run calls; nil fields are skipped.
type RunHandler struct {
	// Record handles one decoded record (aliasing the ring buffer and a
	// Record value that the next call reuses: keep neither); returning
	// false ends the run at once.
	Record func(r *Record) bool
	// Undecodable is told of a record the decoder refused, or of a ring
	// buffer the reader could not make sense of.
	Undecodable func(err error)
	// Idle runs when the ring buffer holds nothing more: after a wait
	// that timed out (timedOut), and after a stretch of records that left
	// it empty.
	Idle func(timedOut bool)
	// Flushed runs when the records that were in the ring buffer when
	// Flush was called have all been handled, with the number of Flush
	// calls that holds for (the oldest ones not yet reported), whether or
	// not the ring buffer has been empty since.
	Flushed func(n int)
}

// Run is the one loop that takes records off a session's ring buffer. It
// handles records as they come, waiting at most poll for more when the
// ring buffer is empty, until stop is closed; then it handles what the
// ring buffer still holds, without waiting, for at most drain (0: until
// it is empty). It reports whether it ended because stop was closed
// (false: a handler ended it, or the session was closed).
//
// Records are taken in stretches (all the ring buffer holds), each
// record decoded where it lies: nothing is copied or allocated per
// record, and the clock is read once per stretch, not per record.
func (s *Session) Run(stop <-chan struct{}, poll, drain time.Duration, h RunHandler) bool {
	// A stop request ends the wait in progress at once, rather than at
	// its timeout.
	ended := make(chan struct{})
	defer close(ended)
	go func() {
		select {
		case <-stop:
			s.reader.wake()
		case <-ended:
		}
	}()
	stopping := false
	var drainUntil time.Time
	handle := func(raw []byte) bool {
		rec, err := s.decoder.Decode(raw)
		if err != nil {
			if h.Undecodable != nil {
				h.Undecodable(err)
			}
			return true
		}
		s.cur = rec
		return h.Record == nil || h.Record(&s.cur)
	}
	for {
		if !stopping {
			select {
			case <-stop:
				stopping = true
				drainUntil = time.Now().Add(drain)
			default:
			}
		}
		if s.reader.available() == 0 {
			if stopping {
				if h.Idle != nil {
					h.Idle(true)
				}
				return true
			}
			err := s.reader.wait(time.Now().Add(poll))
			switch {
			case errors.Is(err, ErrTimeout):
				// Records sent without a wake-up may be there.
				if s.reader.available() == 0 {
					if n := s.reader.reached(); n > 0 && h.Flushed != nil {
						h.Flushed(n)
					}
					if h.Idle != nil {
						h.Idle(true)
					}
					continue
				}
			case errors.Is(err, ErrFlushed):
				// The read below, empty or not, reports it (reached).
			case err != nil:
				// Closed, or epoll failed.
				return stopping
			}
		}
		more, err := s.reader.read(handle)
		switch {
		case errors.Is(err, errRingClosed):
			return stopping
		case err != nil:
			// The ring buffer does not hold what the kernel writes:
			// reading on would repeat the error forever.
			if h.Undecodable != nil {
				h.Undecodable(err)
			}
			return false
		case !more:
			return false
		}
		if n := s.reader.reached(); n > 0 && h.Flushed != nil {
			h.Flushed(n)
		}
		if h.Idle != nil && s.reader.available() == 0 {
			h.Idle(false)
		}
		if stopping && drain > 0 && time.Now().After(drainUntil) {
			return true
		}
	}
}
