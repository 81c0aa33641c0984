package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/ktrace-dev/ktrace/events"
	"github.com/ktrace-dev/ktrace/grammar"
	"github.com/ktrace-dev/ktrace/session"
	"github.com/ktrace-dev/ktrace/tracefs"
	"github.com/spf13/cobra"
)

func (g *globals) sessionPath() (string, error) {
	if g.session != "" {
		return g.session, nil
	}
	p, err := session.DefaultPath()
	if err != nil {
		return "", failf(exitUsage, "%w", err)
	}
	return p, nil
}

// loadedSession is a session replayed into a world of the CLI.
type loadedSession struct {
	path string
	env  *env
	w    *world
	// unlock releases the session's lock; nil when the session was
	// loaded to be read only.
	unlock func()
}

// sessionLockWait bounds how long a verb waits for another ktrace to
// release the session's lock.
var sessionLockWait = 30 * time.Second

// lockSession takes the session's lock (session.Lock), as an exit error.
func lockSession(p string) (unlock func(), err error) {
	unlock, err = session.Lock(p, sessionLockWait)
	if err != nil {
		return nil, failf(exitRejected, "%w", err)
	}
	return unlock, nil
}

// loadSession replays the session file into a fresh world, to be read
// only: saves replace the file by a rename, so it is always read whole. A
// line the model no longer accepts (e.g. the file was made with another
// --kernel) is an error naming the line.
func (g *globals) loadSession() (*loadedSession, error) {
	p, err := g.sessionPath()
	if err != nil {
		return nil, err
	}
	return g.loadSessionFrom(p)
}

// loadSessionForUpdate is loadSession for a verb that changes the
// session: it holds the session's lock from before the read until
// release, so that concurrent verbs run one after another, each on its
// predecessor's result, and none loses another's change.
func (g *globals) loadSessionForUpdate() (*loadedSession, error) {
	p, err := g.sessionPath()
	if err != nil {
		return nil, err
	}
	unlock, err := lockSession(p)
	if err != nil {
		return nil, err
	}
	s, err := g.loadSessionFrom(p)
	if err != nil {
		unlock()
		return nil, err
	}
	s.unlock = unlock
	return s, nil
}

// release lets the next verb at the session.
func (s *loadedSession) release() {
	if s.unlock != nil {
		s.unlock()
		s.unlock = nil
	}
}

func (g *globals) loadSessionFrom(p string) (*loadedSession, error) {
	e, err := g.loadEnv("latest")
	if err != nil {
		return nil, err
	}
	s := &loadedSession{path: p, env: e, w: e.newWorld()}
	data, err := os.ReadFile(p)
	if errors.Is(err, os.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return nil, failf(exitRejected, "read session: %w", err)
	}
	if err := replaySession(e, s.w, p, data, func(ev *events.Event) error {
		return s.w.reg.SetEnabled(ev, true)
	}); err != nil {
		return nil, err
	}
	return s, nil
}

// replaySession writes the session file's lines (data, read from p) to
// the dynamic_events of w, then enables the events it marks with enable.
// A line the model no longer accepts (e.g. the file was made with another
// --kernel) is an error naming the line.
func replaySession(e *env, w *world, p string, data []byte, enable func(*events.Event) error) error {
	lines, enabled, err := session.Parse(data)
	if err != nil {
		return failf(exitRejected, "session %s: %w", p, err)
	}
	for _, l := range lines {
		if res := w.writeLine(tracefs.DynamicEvents, l.Text); res.errno != 0 {
			msg := grammar.Strerror(res.errno)
			if len(res.logs) > 0 {
				msg = res.logs[len(res.logs)-1].Msg
			}
			return failf(exitRejected, "session %s line %d (%s) is not accepted by kernel model %s: %s", p, l.N, l.Text, e.model.Release(), msg)
		}
	}
	for _, name := range enabled {
		ev, err := session.Find(w.reg, name)
		if err != nil {
			return failf(exitRejected, "session %s: %w", p, err)
		}
		if err := enable(ev); err != nil {
			return failf(exitRejected, "session %s: enable %s: %w", p, name, err)
		}
	}
	return nil
}

// save writes the session file atomically (session.Save). The session
// must be loaded for update.
func (s *loadedSession) save() error {
	if s.unlock == nil {
		return failf(exitRejected, "save session %s: not loaded for update", s.path)
	}
	if err := session.Save(s.path, session.Format(s.w.reg)); err != nil {
		return failf(exitRejected, "%w", err)
	}
	return nil
}

// find resolves "GROUP/EVENT" or a bare event name unique across groups.
func (s *loadedSession) find(name string) (*events.Event, error) { return session.Find(s.w.reg, name) }

func newAddCmd(g *globals) *cobra.Command {
	var fromFile string
	cmd := &cobra.Command{
		Use:   "add LINE... | add -f FILE",
		Short: "Add probe events to the session (all or nothing)",
		Long: `add writes each LINE to the session's dynamic_events, in order. Like
register_kprobes, it is all or nothing: if one line is rejected its
error_log entry is printed and no line is added. On success the readback
of the new probes is printed (JSON: {"added": [lines], "needs": {line:
[features]}}). --syntax defaults to latest here, and add says on stderr
which kernel features a line needs beyond the model kernel's own rules
(fprobes, BTF arguments, $argN on return probes, %pd/%pD, ...): ktrace's
eBPF backend runs them on that kernel. -f FILE adds the lines of FILE
('-' for stdin; blank and '#' lines skipped) after any LINE, all or
nothing as well. A rejected line is followed on stderr by "hint:" lines
where the model can say more (see 'ktrace check --help'). Put -- before
lines that start with '-'.`,
		Example: `  ktrace add 'p:myev do_sys_openat2 dfd=%di:s32 path=+0(%si):string'
  ktrace add 'r:myret vfs_read $retval' 'f:fe vfs_write $arg*'
  ktrace --session ./probes.session add 'p:ev vfs_read'
  ktrace add -f probes.txt`,
		Args: usageArgs(cobra.ArbitraryArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			if fromFile != "" {
				more, err := readLines(cmd.InOrStdin(), fromFile)
				if err != nil {
					return failf(exitRejected, "add: %w", err)
				}
				args = append(args, more...)
			}
			if len(args) == 0 {
				return &exitError{code: exitUsage, err: fmt.Errorf("add needs LINE arguments or -f FILE (see 'ktrace add --help')")}
			}
			s, err := g.loadSessionForUpdate()
			if err != nil {
				return err
			}
			defer s.release()
			before := len(splitLines(s.w.reg.Readback(events.DynamicEvents)))
			for _, line := range args {
				res := s.w.writeLine(tracefs.DynamicEvents, line)
				if res.errno == 0 {
					continue
				}
				stderr := cmd.ErrOrStderr()
				var log *tracefs.LogEntry
				if n := len(res.logs); n > 0 {
					log = &res.logs[n-1]
					fmt.Fprint(stderr, tracefs.FormatLogEntry(*log))
				}
				for _, h := range s.env.hinter().For(line, tracefs.DynamicEvents, log) {
					fmt.Fprintf(stderr, "hint: %s\n", h)
				}
				return failf(exitRejected, "add %q: write error: %s (%s); nothing added", line, grammar.Strerror(res.errno), grammar.ErrnoName(res.errno))
			}
			if err := s.save(); err != nil {
				return err
			}
			all := splitLines(s.w.reg.Readback(events.DynamicEvents))
			added := []string{}
			if before <= len(all) {
				added = all[before:]
			}
			// Say which kernel features each line needs beyond the
			// model kernel's own syntax (ktrace's eBPF backend runs them).
			needs := map[string][]string{}
			for _, line := range args {
				if n := reportNeeds(cmd.ErrOrStderr(), s.w.reg.Model(), line); len(n) > 0 {
					needs[line] = n
				}
			}
			if g.output == "json" {
				return writeJSON(cmd.OutOrStdout(), struct {
					Added []string            `json:"added"`
					Needs map[string][]string `json:"needs"`
				}{added, needs})
			}
			for _, l := range added {
				fmt.Fprintln(cmd.OutOrStdout(), l)
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&fromFile, "from-file", "f", "", "add the lines of `FILE` ('-' for stdin)")
	return cmd
}

func newRmCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "rm GROUP/EVENT...",
		Short: "Remove events from the session",
		Long: `rm removes each event as '-:GROUP/EVENT' written to dynamic_events would.
An enabled event cannot be removed (EBUSY); 'GROUP/' removes a whole group.
Either every removal succeeds or the session is left unchanged.`,
		Example: `  ktrace rm kprobes/myev
  ktrace rm myev
  ktrace rm kprobes/`,
		Args: usageArgs(cobra.MinimumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := g.loadSessionForUpdate()
			if err != nil {
				return err
			}
			defer s.release()
			for _, name := range args {
				target := name
				if !strings.Contains(name, "/") {
					ev, err := s.find(name)
					if err != nil {
						return failf(exitRejected, "rm: %w", err)
					}
					target = ev.Group + "/" + ev.Name
				}
				res := s.w.writeLine(tracefs.DynamicEvents, "-:"+target)
				switch res.errno {
				case 0:
				case syscall.ENOENT:
					return failf(exitRejected, "rm %s: no such event; nothing removed", name)
				case syscall.EBUSY:
					return failf(exitRejected, "rm %s: event is enabled (EBUSY); disable it first; nothing removed", name)
				default:
					return failf(exitRejected, "rm %s: %s (%s); nothing removed", name, grammar.Strerror(res.errno), grammar.ErrnoName(res.errno))
				}
			}
			return s.save()
		},
	}
}

// lsEvent is one event in `ktrace ls --output json`.
type lsEvent struct {
	Group   string   `json:"group"`
	Name    string   `json:"name"`
	ID      int      `json:"id"`
	Kind    string   `json:"kind"`
	Enabled bool     `json:"enabled"`
	Probes  []string `json:"probes"`
}

func newLsCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "ls",
		Short: "List the session's events",
		Long: `ls prints the session's dynamic_events readback, marking enabled events with
a trailing '# enabled' comment (the output can be written back to a
dynamic_events file). With --output json: an array of events with group,
name, id, kind, enabled and their probe lines.`,
		Example: `  ktrace ls
  ktrace ls --output json`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := g.loadSession()
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if g.output == "json" {
				list := []lsEvent{}
				for _, ev := range s.w.reg.Events() {
					e := lsEvent{Group: ev.Group, Name: ev.Name, ID: ev.ID, Kind: ev.Kind.String(), Enabled: ev.Enabled, Probes: []string{}}
					for _, p := range ev.Probes {
						e.Probes = append(e.Probes, p.Line)
					}
					list = append(list, e)
				}
				return writeJSON(out, list)
			}
			enabled := map[string]bool{}
			for _, ev := range s.w.reg.Events() {
				if ev.Enabled {
					enabled[ev.Group+"/"+ev.Name] = true
				}
			}
			for _, l := range splitLines(s.w.reg.Readback(events.DynamicEvents)) {
				if enabled[readbackName(l)] {
					l += "  # enabled"
				}
				fmt.Fprintln(out, l)
			}
			return nil
		},
	}
}

// readbackName extracts GROUP/EVENT from a readback line
// ("p:kprobes/ev sym ..." -> "kprobes/ev").
func readbackName(line string) string {
	head, _, _ := strings.Cut(line, " ")
	_, name, _ := strings.Cut(head, ":")
	return name
}

func writeJSON(out io.Writer, v any) error {
	enc := json.NewEncoder(out)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return failf(exitRejected, "encode: %w", err)
	}
	return nil
}

func newFormatCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "format GROUP/EVENT...",
		Short: "Print events/GROUP/EVENT/format of session events",
		Example: `  ktrace format kprobes/myev
  ktrace format myev --output json`,
		Args: usageArgs(cobra.MinimumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := g.loadSession()
			if err != nil {
				return err
			}
			formats := map[string]string{}
			var order []string
			for _, name := range args {
				ev, err := s.find(name)
				if err != nil {
					return failf(exitRejected, "format: %w", err)
				}
				key := ev.Group + "/" + ev.Name
				formats[key] = ev.Format()
				order = append(order, key)
			}
			if g.output == "json" {
				return writeJSON(cmd.OutOrStdout(), formats)
			}
			for _, k := range order {
				fmt.Fprint(cmd.OutOrStdout(), formats[k])
			}
			return nil
		},
	}
}

func newEnableCmd(g *globals, on bool) *cobra.Command {
	verb, short := "enable", "Enable session events (events/GROUP/EVENT/enable = 1)"
	if !on {
		verb, short = "disable", "Disable session events (events/GROUP/EVENT/enable = 0)"
	}
	return &cobra.Command{
		Use:   verb + " GROUP/EVENT...",
		Short: short,
		Long: short + `.
The state is kept in the session; an enabled event cannot be removed or
truncated away (EBUSY), as in the kernel. Without a probe backend enabling
records nothing in trace.`,
		Example: fmt.Sprintf("  ktrace %s kprobes/myev\n  ktrace %s myev other/ev2", verb, verb),
		Args:    usageArgs(cobra.MinimumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := g.loadSessionForUpdate()
			if err != nil {
				return err
			}
			defer s.release()
			for _, name := range args {
				ev, err := s.find(name)
				if err != nil {
					return failf(exitRejected, "%s: %w", verb, err)
				}
				if err := s.w.reg.SetEnabled(ev, on); err != nil {
					return failf(exitRejected, "%s %s: %w", verb, name, err)
				}
			}
			return s.save()
		},
	}
}
