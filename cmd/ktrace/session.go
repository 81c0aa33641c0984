package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/ktrace-dev/ktrace/check"
	"github.com/ktrace-dev/ktrace/hints"
	"github.com/ktrace-dev/ktrace/session"
	"github.com/ktrace-dev/ktrace/tracefs"
	"github.com/ktrace-dev/ktrace/tracefs/live"
	"github.com/spf13/cobra"
)

// loadedSession is the session store opened for a verb, with the model
// and syntax it was replayed in.
type loadedSession struct {
	*session.Store
	env *env
}

// loadSession replays the session file into a fresh registry, to be read
// only. A line the model no longer accepts (e.g. the file was made with
// another --kernel) is an error naming the line.
func (g *globals) loadSession() (*loadedSession, error) { return g.openSession(false) }

// loadSessionForUpdate is loadSession under the session's lock, held
// until Close, for a verb that changes the session.
func (g *globals) loadSessionForUpdate() (*loadedSession, error) { return g.openSession(true) }

func (g *globals) openSession(update bool) (*loadedSession, error) {
	p := g.session
	if p == "" {
		var err error
		if p, err = session.DefaultPath(); err != nil {
			return nil, failf(exitUsage, "%w", err)
		}
	}
	e, err := g.loadEnv("latest")
	if err != nil {
		return nil, err
	}
	st, err := session.Load(p, e.model, e.dialect, update)
	if err != nil {
		return nil, failf(exitRejected, "%w", err)
	}
	return &loadedSession{Store: st, env: e}, nil
}

// useSession is session.Attach of --session for `ktrace sh` and `ktrace
// mount`; its errors (and save's) exit 1.
func (g *globals) useSession(w *live.World) (func() error, error) {
	save, err := session.Attach(g.session, w.Reg, w.Replayer())
	if err != nil {
		return nil, failf(exitRejected, "%w", err)
	}
	return func() error {
		if err := save(); err != nil {
			return failf(exitRejected, "%w", err)
		}
		return nil
	}, nil
}

func newAddCmd(g *globals) *cobra.Command {
	var fromFile string
	cmd := &cobra.Command{
		Use:   "add LINE... | add -f FILE",
		Short: "Add probe events to the session (all or nothing)",
		Args:  usageArgs(cobra.ArbitraryArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			if fromFile != "" {
				more, err := check.ReadLines(cmd.InOrStdin(), fromFile)
				if err != nil {
					return failf(exitRejected, "add: %w", err)
				}
				args = append(args, check.Texts(more)...)
			}
			if len(args) == 0 {
				return &exitError{code: exitUsage, err: fmt.Errorf("add needs LINE arguments or -f FILE (see 'ktrace add --help')")}
			}
			s, err := g.loadSessionForUpdate()
			if err != nil {
				return err
			}
			defer s.Close()
			added, err := s.Add(args)
			if ae := (*session.AddError)(nil); errors.As(err, &ae) {
				(&hints.Hinter{Model: s.env.model, Dialect: s.env.dialect}).Report(cmd.ErrOrStderr(), ae.Line, tracefs.DynamicEvents, err)
				return &exitError{code: exitRejected, err: err}
			}
			if err := s.Save(); err != nil {
				return failf(exitRejected, "%w", err)
			}
			// Say which kernel features each line needs beyond the
			// model kernel's own syntax (ktrace's eBPF backend runs them).
			needs := map[string][]string{}
			for _, line := range args {
				if n := hints.WriteNeeds(cmd.ErrOrStderr(), s.Reg.Model(), line); len(n) > 0 {
					needs[line] = n
				}
			}
			if added == nil {
				added = []string{}
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
		Args:  usageArgs(cobra.MinimumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			return g.updateSession(func(s *loadedSession) error { return s.Remove(args) })
		},
	}
}

// updateSession runs change on the session under its lock and saves the
// result when change succeeds (a failed change leaves the file as it was).
func (g *globals) updateSession(change func(*loadedSession) error) error {
	s, err := g.loadSessionForUpdate()
	if err != nil {
		return err
	}
	defer s.Close()
	if err := change(s); err != nil {
		return &exitError{code: exitRejected, err: err}
	}
	if err := s.Save(); err != nil {
		return failf(exitRejected, "%w", err)
	}
	return nil
}

func newLsCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "ls",
		Short: "List the session's events",
		Args:  usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := g.loadSession()
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if g.output == "json" {
				return writeJSON(out, session.Entries(s.Reg))
			}
			for _, l := range session.Listed(s.Reg) {
				fmt.Fprintln(out, l)
			}
			return nil
		},
	}
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
		Args:  usageArgs(cobra.MinimumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := g.loadSession()
			if err != nil {
				return err
			}
			formats, order, err := session.Formats(s.Reg, args)
			if err != nil {
				return failf(exitRejected, "format: %w", err)
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
		Args:  usageArgs(cobra.MinimumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			return g.updateSession(func(s *loadedSession) error { return s.SetEnabled(args, on) })
		},
	}
}
