package main

import (
	"fmt"
	"os"

	"github.com/ktrace-dev/ktrace/events"
	"github.com/ktrace-dev/ktrace/session"
	"github.com/ktrace-dev/ktrace/tracefs"
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
	define := func(line string) error {
		h, err := w.fs.Open(tracefs.DynamicEvents.String(), os.O_WRONLY|os.O_APPEND)
		if err != nil {
			return err
		}
		defer h.Close()
		_, err = h.Write([]byte(line + "\n"))
		return err
	}
	enable := func(ev *events.Event) error {
		h, err := w.fs.Open("events/"+ev.Group+"/"+ev.Name+"/enable", os.O_WRONLY|os.O_TRUNC)
		if err != nil {
			return fmt.Errorf("open enable: %w", err)
		}
		defer h.Close()
		if _, err := h.Write([]byte("1\n")); err != nil {
			return fmt.Errorf("write enable: %w", err)
		}
		return nil
	}
	st, err := session.OpenForUpdate(g.session, w.reg, session.Replayer{Define: define, Enable: enable})
	if err != nil {
		return nil, failf(exitRejected, "%w", err)
	}
	return func() error {
		defer st.Close()
		if err := st.Save(); err != nil {
			return failf(exitRejected, "%w", err)
		}
		return nil
	}, nil
}
