package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/ktrace-dev/ktrace/events"
)

// useSession makes `ktrace sh` and `ktrace mount` work on the session
// given with --session: it takes the session's lock (held until the verb
// ends, so concurrent add/rm/enable/disable wait for it), writes the
// session's lines to w's dynamic_events and enables the events it marks
// through their enable files, as a script would (with a probe backend
// they attach). The returned function saves w's events back to the
// session, with their enabled state, and releases the lock; call it
// before the events are torn down. Without --session it does nothing.
func (g *globals) useSession(e *env, w *world) (save func() error, err error) {
	if g.session == "" {
		return func() error { return nil }, nil
	}
	p := g.session
	unlock, err := lockSession(p)
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(p)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		unlock()
		return nil, failf(exitRejected, "read session: %w", err)
	}
	err = replaySession(e, w, p, data, func(ev *events.Event) error {
		h, err := w.fs.Open("events/"+ev.Group+"/"+ev.Name+"/enable", os.O_WRONLY|os.O_TRUNC)
		if err != nil {
			return fmt.Errorf("open enable: %w", err)
		}
		defer h.Close()
		if _, err := h.Write([]byte("1\n")); err != nil {
			return fmt.Errorf("write enable: %w", err)
		}
		return nil
	})
	if err != nil {
		unlock()
		return nil, err
	}
	s := &loadedSession{path: p, env: e, w: w, unlock: unlock}
	return func() error {
		defer s.release()
		return s.save()
	}, nil
}
