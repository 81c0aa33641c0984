package session

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/ktrace-dev/ktrace/events"
	"github.com/ktrace-dev/ktrace/grammar"
	"github.com/ktrace-dev/ktrace/kernel"
)

// LockWait bounds how long opening a session for update waits for another
// ktrace to release the session's lock.
var LockWait = 30 * time.Second

// Store is a session file replayed into a registry: read only, or held
// for update (under the session's lock, from the read to Close, so that
// concurrent verbs run one after another, each on its predecessor's
// result, and none loses another's change).
type Store struct {
	Path string
	Reg  *events.Registry
	// unlock releases the lock; nil when opened read only.
	unlock func()
}

// Replayer writes a session's lines and enables its events. A nil Define
// runs the lines on the registry's dynamic_events; a nil Enable enables
// through the registry. sh and mount pass their tracefs's write and
// enable-file paths, so a probe backend attaches what the session enables.
type Replayer struct {
	Define func(line string) error
	// Filter gives an event its filter (nil: through the registry), before
	// any event is enabled.
	Filter func(ev *events.Event, expr string) error
	Enable func(ev *events.Event) error
}

// Open replays the session file p into reg, read only: saves replace the
// file by a rename, so it is always read whole. A missing file is an
// empty session.
func Open(p string, reg *events.Registry, r Replayer) (*Store, error) {
	s := &Store{Path: p, Reg: reg}
	if err := s.replay(r); err != nil {
		return nil, err
	}
	return s, nil
}

// OpenForUpdate is Open under the session's lock, held until Close.
func OpenForUpdate(p string, reg *events.Registry, r Replayer) (*Store, error) {
	unlock, err := Lock(p, LockWait)
	if err != nil {
		return nil, err
	}
	s := &Store{Path: p, Reg: reg, unlock: unlock}
	if err := s.replay(r); err != nil {
		unlock()
		return nil, err
	}
	return s, nil
}

// Close releases the lock of a session opened for update.
func (s *Store) Close() {
	if s.unlock != nil {
		s.unlock()
		s.unlock = nil
	}
}

// replay writes the file's lines to dynamic_events, then enables the
// events it marks. A line the model no longer accepts (e.g. the file was
// made with another --kernel) is an error naming the line.
func (s *Store) replay(r Replayer) error {
	data, err := os.ReadFile(s.Path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read session: %w", err)
	}
	if r.Define == nil {
		r.Define = func(line string) error { return define(s.Reg, line) }
	}
	if r.Enable == nil {
		r.Enable = func(ev *events.Event) error { return s.Reg.SetEnabled(ev, true) }
	}
	if r.Filter == nil {
		r.Filter = s.Reg.SetFilterText
	}
	lines, filters, enabled, err := Parse(data)
	if err != nil {
		return fmt.Errorf("session %s: %w", s.Path, err)
	}
	for _, l := range lines {
		if err := r.Define(l.Text); err != nil {
			return fmt.Errorf("session %s line %d (%s) is not accepted by kernel model %s: %s", s.Path, l.N, l.Text, s.Reg.Model().Release(), writeErrorText(err))
		}
	}
	for _, f := range filters {
		ev, err := Find(s.Reg, f.Event)
		if err != nil {
			return fmt.Errorf("session %s line %d: %w", s.Path, f.N, err)
		}
		if err := r.Filter(ev, f.Expr); err != nil {
			return fmt.Errorf("session %s line %d: filter %s is not accepted by kernel model %s: %w", s.Path, f.N, f.Event, s.Reg.Model().Release(), err)
		}
	}
	for _, name := range enabled {
		ev, err := Find(s.Reg, name)
		if err != nil {
			return fmt.Errorf("session %s: %w", s.Path, err)
		}
		if err := r.Enable(ev); err != nil {
			return fmt.Errorf("session %s: enable %s: %w", s.Path, name, err)
		}
	}
	return nil
}

// writeErrorText is the last error_log message of a failed write, or
// its errno's text.
func writeErrorText(err error) string {
	var we *events.WriteError
	if errors.As(err, &we) && we.Last() != nil {
		return we.Last().Msg
	}
	return grammar.Strerror(grammar.ErrnoOf(err))
}

// define writes line to dynamic_events as `echo LINE >> dynamic_events`.
func define(reg *events.Registry, line string) error {
	_, err := reg.Define(events.DynamicEvents, line)
	return err
}

// Save writes the registry's events, with their enabled state, to the
// session file atomically. The session must be open for update.
func (s *Store) Save() error {
	if s.unlock == nil {
		return fmt.Errorf("save session %s: not opened for update", s.Path)
	}
	return Save(s.Path, Format(s.Reg))
}

// AddError is a line Add could not add: its write error (with the
// error_log entries the kernel would log) and the line.
type AddError struct {
	Line string
	Err  error
}

func (e *AddError) Error() string {
	errno := grammar.ErrnoOf(e.Err)
	return fmt.Sprintf("add %q: write error: %s (%s); nothing added", e.Line, grammar.Strerror(errno), grammar.ErrnoName(errno))
}

func (e *AddError) Unwrap() error { return e.Err }

// Add writes the lines to dynamic_events in order, all or nothing as
// register_kprobes is: on the first rejected line it returns an
// *AddError and the caller must not save. It returns the readback lines
// the lines added.
func (s *Store) Add(lines []string) (added []string, err error) {
	before := len(readbackLines(s.Reg))
	for _, line := range lines {
		if err := define(s.Reg, line); err != nil {
			return nil, &AddError{Line: line, Err: err}
		}
	}
	all := readbackLines(s.Reg)
	if before <= len(all) {
		added = all[before:]
	}
	return added, nil
}

// Remove removes each named event ("GROUP/EVENT", a bare name unique
// across groups, or "GROUP/" for a whole group) as '-:GROUP/EVENT'
// written to dynamic_events would. On an error the caller must not save.
func (s *Store) Remove(names []string) error {
	for _, name := range names {
		target := name
		if !strings.Contains(name, "/") {
			ev, err := Find(s.Reg, name)
			if err != nil {
				return fmt.Errorf("rm: %w", err)
			}
			target = ev.Group + "/" + ev.Name
		}
		err := define(s.Reg, "-:"+target)
		switch errno := grammar.ErrnoOf(err); {
		case err == nil:
		case errno == syscall.ENOENT:
			return fmt.Errorf("rm %s: no such event; nothing removed", name)
		case errno == syscall.EBUSY:
			return fmt.Errorf("rm %s: event is enabled (EBUSY); disable it first; nothing removed", name)
		default:
			return fmt.Errorf("rm %s: %s (%s); nothing removed", name, grammar.Strerror(errno), grammar.ErrnoName(errno))
		}
	}
	return nil
}

// SetEnabled enables or disables each named event.
func (s *Store) SetEnabled(names []string, on bool) error {
	verb := "enable"
	if !on {
		verb = "disable"
	}
	for _, name := range names {
		ev, err := Find(s.Reg, name)
		if err != nil {
			return fmt.Errorf("%s: %w", verb, err)
		}
		if err := s.Reg.SetEnabled(ev, on); err != nil {
			return fmt.Errorf("%s %s: %w", verb, name, err)
		}
	}
	return nil
}

// Listed is the session's dynamic_events readback with " # enabled"
// after the lines of enabled events: a file that can be written back.
func Listed(reg *events.Registry) []string {
	enabled := map[string]bool{}
	for _, ev := range reg.Events() {
		if ev.Enabled {
			enabled[ev.Group+"/"+ev.Name] = true
		}
	}
	out := readbackLines(reg)
	for i, l := range out {
		head, _, _ := strings.Cut(l, " ")
		if _, name, _ := strings.Cut(head, ":"); enabled[name] {
			out[i] = l + "  # enabled"
		}
	}
	return out
}

func readbackLines(reg *events.Registry) []string {
	s := strings.TrimSuffix(reg.Readback(events.DynamicEvents), "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// Load opens the session file p replayed into a fresh registry of model m
// in dialect d: read only (Open), or for update (OpenForUpdate).
func Load(p string, m *kernel.Model, d *grammar.Dialect, update bool) (*Store, error) {
	open := Open
	if update {
		open = OpenForUpdate
	}
	return open(p, events.NewRegistry(m, d), Replayer{})
}

// Attach gives a tracefs the session p (`ktrace sh` and `ktrace mount`
// with --session): it opens p for update, so that concurrent verbs wait
// for the tracefs to end, and replays it into reg through r as a script
// would (with a probe backend its enabled events attach). The returned
// save writes reg's events back to p, with their enabled state, and
// releases the lock; call it before the events are torn down. An empty p
// is no session: save does nothing.
func Attach(p string, reg *events.Registry, r Replayer) (save func() error, err error) {
	if p == "" {
		return func() error { return nil }, nil
	}
	st, err := OpenForUpdate(p, reg, r)
	if err != nil {
		return nil, err
	}
	return func() error {
		defer st.Close()
		return st.Save()
	}, nil
}
