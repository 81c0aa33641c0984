package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/ktrace-dev/ktrace/events"
	"github.com/ktrace-dev/ktrace/export"
	"github.com/ktrace-dev/ktrace/grammar"
	"github.com/ktrace-dev/ktrace/hints"
	"github.com/ktrace-dev/ktrace/record"
	"github.com/ktrace-dev/ktrace/tracer"
)

// recordOpts are the flags of ktrace record.
type recordOpts struct {
	duration time.Duration
	count    uint64
	pid      int
	follow   bool
	file     string
	bufSize  string
	filter   string
	triggers []string
	noTrace  bool
	export   string
	metrics  string
}

func newRecordCmd(g *globals) *cobra.Command {
	o := &recordOpts{}
	cmd := &cobra.Command{
		Use:   "record [LINE...] [-- CMD ARGS...]",
		Short: "Trace events with eBPF and print them as the kernel's trace file does",
		RunE: func(cmd *cobra.Command, args []string) error {
			lines, command, err := record.SplitCommand(args, cmd.ArgsLenAtDash(), o.follow, o.pid)
			if err != nil {
				return &exitError{code: exitUsage, err: fmt.Errorf("record: %w", err)}
			}
			if g.kernel != "" && g.kernel != "host" {
				return &exitError{code: exitUsage, err: fmt.Errorf("record traces the running kernel: --kernel must be host, not %q", g.kernel)}
			}
			return runRecord(cmd, g, o, lines, command)
		},
	}
	f := cmd.Flags()
	f.DurationVar(&o.duration, "duration", 0, "stop after this long (e.g. 10s)")
	f.Uint64Var(&o.count, "count", 0, "stop after this many printed events")
	f.IntVar(&o.pid, "pid", 0, "only events of this process (thread group id or thread id)")
	f.BoolVar(&o.follow, "follow", false, "only events of CMD's process tree")
	f.StringVarP(&o.file, "write", "w", "", "write the events to FILE instead of stdout")
	f.StringVar(&o.filter, "filter", "", "an event filter (the kernel's filter language) for every event of the command line, run in the events' eBPF programs")
	f.StringArrayVar(&o.triggers, "trigger", nil, "a hist trigger for an event of the recording, GROUP/EVENT:hist:..., as written to events/GROUP/EVENT/trigger; counted in the event's eBPF programs, its hist file printed at the end (repeatable)")
	f.BoolVar(&o.noTrace, "no-trace", false, "print no events: count hits and --trigger histograms only (the events in soft mode)")
	f.StringVar(&o.export, "export", "", "also send every event as an OTLP log record, and the counters as OTLP metrics: otlp (configured by the OTEL_EXPORTER_OTLP_* variables)")
	f.StringVar(&o.metrics, "metrics-addr", "", "serve per-event hits and misses and lost events for Prometheus at http://HOST:PORT/metrics while recording")
	f.StringVar(&o.bufSize, "buffer-size", "", "ring buffer size, a power of two with an optional K, M or G suffix (default: what holds a burst of 200,000 of the events, up to 64M)")
	return cmd
}

// recordSetup loads the session, adds the LINEs and returns the events
// to attach: the session's enabled events and the LINEs' events, and
// which of them the LINEs name.
func recordSetup(g *globals, lines []string, stderr io.Writer) (s *loadedSession, evs, named []*events.Event, err error) {
	if s, err = g.loadSession(); err != nil {
		return nil, nil, nil, err
	}
	evs, named, err = record.Select(s.Reg, lines, func(line string) { hints.WriteNeeds(stderr, s.Reg.Model(), line) })
	var de *record.DefineError
	switch {
	case errors.As(err, &de):
		de.WriteLog(stderr)
		return nil, nil, nil, failf(exitRejected, "record: %w", err)
	case err != nil:
		return nil, nil, nil, &exitError{code: exitUsage, err: fmt.Errorf("record: %w", err)}
	}
	return s, evs, named, nil
}

func runRecord(cmd *cobra.Command, g *globals, o *recordOpts, lines, command []string) error {
	stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
	ringSize, err := record.ParseRingSize(o.bufSize)
	if err != nil {
		return &exitError{code: exitUsage, err: fmt.Errorf("record: --buffer-size: %w", err)}
	}
	// The check and the ring run while the model loads; a missing
	// privilege or feature is still what a failing start reports first.
	prep := record.Prepare(ringSize)
	defer prep.Ring.Close()
	g.kernel = "host"
	var setupOut bytes.Buffer
	s, evs, named, err := recordSetup(g, lines, &setupOut)
	if cerr := prep.Checked(); cerr != nil {
		return &exitError{code: exitNoAccess, err: fmt.Errorf("record: %w", cerr)}
	}
	stderr.Write(setupOut.Bytes())
	if err != nil {
		return err
	}
	if o.filter != "" {
		if err := record.SetFilters(named, o.filter, s.env.model, grammar.Latest); err != nil {
			var fe *record.FilterError
			if errors.As(err, &fe) {
				fmt.Fprint(stderr, "ktrace: "+fe.LogText())
			}
			return failf(exitRejected, "record: --filter: %v", err)
		}
	}
	trigs, err := record.ParseTriggers(evs, o.triggers, s.env.model, s.Reg.Dialect())
	if err != nil {
		var te *record.TriggerError
		if errors.As(err, &te) {
			te.WriteLog(stderr)
			return failf(exitRejected, "record: --trigger: %v", err)
		}
		return &exitError{code: exitUsage, err: fmt.Errorf("record: --trigger: %w", err)}
	}
	sinks, err := export.OpenSinks(context.Background(), o.export, o.metrics)
	if err != nil {
		return &exitError{code: exitUsage, err: fmt.Errorf("record: %w", err)}
	}
	defer sinks.Close()
	// SIGINT, SIGTERM and SIGHUP stop recording and detach; they are
	// caught from before the first probe is attached until everything is
	// detached, so that no signal (a second one included) cuts attaching
	// or detaching short.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	out := stdout
	if o.file != "" {
		f, err := os.Create(o.file)
		if err != nil {
			return failf(exitRejected, "record: %w", err)
		}
		defer f.Close()
		out = f
	}
	ro := record.Options{
		Model: s.env.model, Events: evs,
		Pid: o.pid, Follow: o.follow, RingSize: ringSize, Ring: prep.Ring,
		Duration: o.duration, Count: o.count,
		Command: command, Stdin: os.Stdin, Stdout: stdout, Stderr: stderr,
		Out: out, JSON: g.output == "json", Reaper: tracer.SelfReaper(),
		Triggers: trigs, NoTrace: o.noTrace,
	}
	sinks.Feed(&ro)
	sum, err := record.Run(ctx, ro)
	if report := sinks.Flush(); sum != nil {
		defer report(stderr)
	}
	if err != nil {
		code := exitRejected
		if errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EACCES) {
			code = exitNoAccess
		}
		return &exitError{code: code, err: fmt.Errorf("record: %w", err)}
	}
	sum.WriteText(stderr)
	return nil
}
