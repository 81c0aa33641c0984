package session

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/ktrace-dev/ktrace/events"
)

// Header is the first line of a session file; FilterPrefix starts the
// lines that give an event its filter ("#filter GROUP/EVENT EXPR", what
// was written to events/GROUP/EVENT/filter), EnabledPrefix those that
// mark enabled events.
const (
	Header        = "# ktrace session: dynamic_events lines; '#filter GROUP/EVENT EXPR' gives an event its filter, '#enabled GROUP/EVENT' marks enabled events"
	FilterPrefix  = "#filter "
	EnabledPrefix = "#enabled "
)

// DefaultPath is where the session lives without --session:
// $XDG_STATE_HOME/ktrace/session, else ~/.local/state/ktrace/session.
func DefaultPath() (string, error) {
	if d := os.Getenv("XDG_STATE_HOME"); d != "" {
		return filepath.Join(d, "ktrace", "session"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("no session file: set --session, $XDG_STATE_HOME or $HOME: %w", err)
	}
	return filepath.Join(home, ".local", "state", "ktrace", "session"), nil
}

// ErrInUse is wrapped by Lock when another holder kept the lock too long.
var ErrInUse = errors.New("session in use")

// Lock takes the session's lock: an exclusive flock(2) on FILE.lock (the
// session file itself is replaced on every save, so it cannot carry the
// lock). It waits up to wait for another holder.
func Lock(p string, wait time.Duration) (unlock func(), err error) {
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return nil, fmt.Errorf("lock session: %w", err)
	}
	lp := p + ".lock"
	f, err := os.OpenFile(lp, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("lock session: %w", err)
	}
	deadline := time.Now().Add(wait)
	for delay := time.Millisecond; ; {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { f.Close() }, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			f.Close()
			return nil, fmt.Errorf("lock session: flock %s: %w", lp, err)
		}
		if time.Now().After(deadline) {
			f.Close()
			return nil, fmt.Errorf("session %s is in use: another ktrace has held %s for %v; nothing changed: %w", p, lp, wait, ErrInUse)
		}
		time.Sleep(delay)
		if delay < 50*time.Millisecond {
			delay *= 2
		}
	}
}

// Line is one definition line of a session file and its line number.
type Line struct {
	N    int
	Text string
}

// Filter is an event's filter as a session file keeps it.
type Filter struct {
	N     int    // line number
	Event string // GROUP/EVENT or a bare name
	Expr  string
}

// Parse splits a session file into its definition lines, the events'
// filters and the events it marks enabled (GROUP/EVENT or a bare name),
// skipping blank and comment lines.
func Parse(data []byte) (lines []Line, filters []Filter, enabled []string, err error) {
	sc := bufio.NewScanner(strings.NewReader(string(data)))
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, EnabledPrefix); ok {
			enabled = append(enabled, strings.TrimSpace(rest))
			continue
		}
		if rest, ok := strings.CutPrefix(line, FilterPrefix); ok {
			name, expr, _ := strings.Cut(strings.TrimLeft(rest, " "), " ")
			filters = append(filters, Filter{N: n, Event: name, Expr: expr})
			continue
		}
		if t := strings.TrimSpace(line); t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		lines = append(lines, Line{N: n, Text: line})
	}
	if err := sc.Err(); err != nil {
		return nil, nil, nil, fmt.Errorf("read session: %w", err)
	}
	return lines, filters, enabled, nil
}

// Format is the session file of a registry's events.
func Format(reg *events.Registry) string {
	var b strings.Builder
	b.WriteString(Header + "\n")
	b.WriteString(reg.Readback(events.DynamicEvents))
	evs := reg.Events()
	for _, ev := range evs {
		if ev.Filter != nil {
			b.WriteString(FilterPrefix + ev.Group + "/" + ev.Name + " " + ev.Filter.Expr + "\n")
		}
	}
	for _, ev := range evs {
		if ev.Enabled {
			b.WriteString(EnabledPrefix + ev.Group + "/" + ev.Name + "\n")
		}
	}
	return b.String()
}

// Save writes content to the session file p: into a temporary file of its
// own in the same directory (keeping p's mode), synced, then renamed over
// p, so that a reader sees the old file or the new one, whole.
func Save(p, content string) error {
	dir := filepath.Dir(p)
	mode := os.FileMode(0o644)
	if fi, err := os.Stat(p); err == nil {
		mode = fi.Mode().Perm()
	}
	tmp, err := os.CreateTemp(dir, filepath.Base(p)+".tmp-*")
	if err != nil {
		return fmt.Errorf("save session: %w", err)
	}
	done := false
	defer func() {
		if !done {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if _, err := tmp.WriteString(content); err != nil {
		return fmt.Errorf("save session: %w", err)
	}
	if err := tmp.Chmod(mode); err != nil {
		return fmt.Errorf("save session: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("save session: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("save session: %w", err)
	}
	if err := os.Rename(tmp.Name(), p); err != nil {
		return fmt.Errorf("save session: %w", err)
	}
	done = true
	// The rename is durable once the directory is synced.
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

// Find resolves "GROUP/EVENT", or a bare event name that is unique across
// groups, in reg.
func Find(reg *events.Registry, name string) (*events.Event, error) {
	if g, n, ok := strings.Cut(name, "/"); ok {
		if ev := reg.Event(g, n); ev != nil {
			return ev, nil
		}
		return nil, fmt.Errorf("no event %s", name)
	}
	var found []*events.Event
	for _, ev := range reg.Events() {
		if ev.Name == name {
			found = append(found, ev)
		}
	}
	switch len(found) {
	case 0:
		return nil, fmt.Errorf("no event %s", name)
	case 1:
		return found[0], nil
	}
	return nil, fmt.Errorf("event name %s is ambiguous: give GROUP/%s", name, name)
}
