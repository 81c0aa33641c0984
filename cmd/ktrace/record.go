package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"sort"
	"strconv"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/ktrace-dev/ktrace/events"
	"github.com/ktrace-dev/ktrace/grammar"
	"github.com/ktrace-dev/ktrace/tracer"
)

// flushEvery is how often record writes out its output while events keep
// coming.
const flushEvery = 50 * time.Millisecond

// drainTime bounds reading what is left in the ring buffer once record
// stops.
const drainTime = 2 * time.Second

// recordOpts are the flags of ktrace record.
type recordOpts struct {
	duration time.Duration
	count    uint64
	pid      int
	follow   bool
	file     string
	bufSize  string
}

func newRecordCmd(g *globals) *cobra.Command {
	o := &recordOpts{}
	cmd := &cobra.Command{
		Use:   "record [LINE...] [-- CMD ARGS...]",
		Short: "Trace events with eBPF and print them as the kernel's trace file does",
		Long: `record compiles every enabled event of the session and each LINE given
(kprobe_events / dynamic_events syntax, the newest syntax on any kernel) into
eBPF programs, attaches them to the running kernel and prints each hit as the
kernel's trace file would ("COMM-PID [CPU] FLAGS TS: EVENT: (IP) name=value"),
or one JSON object per hit with --output json.

Recording is system-wide, as with the kernel's own tracer; --pid narrows it
to one process, --follow to the process tree of CMD. It stops on Ctrl-C,
after --duration, after --count printed events, or when CMD exits, then
detaches everything and prints a summary (hits, misses, printed) on stderr.

Needs root (CAP_BPF and CAP_PERFMON, or CAP_SYS_ADMIN) and a kernel with
kprobes and BPF ring buffers; without them it exits 3 naming what is
missing. Probes are tied to ktrace's process: nothing stays attached when
it exits or is killed.`,
		Example: `  ktrace record 'p:myev do_sys_openat2 path=+0($arg2):string' -- cat /etc/hostname
  ktrace record 'r:rd vfs_read $retval' --duration 5s --output json -w trace.json
  ktrace add 'f:op do_sys_openat2 filename:ustring' && ktrace enable op && ktrace record --count 10`,
		RunE: func(cmd *cobra.Command, args []string) error {
			lines, command := args, []string(nil)
			if dash := cmd.ArgsLenAtDash(); dash >= 0 {
				lines, command = args[:dash], args[dash:]
				if len(command) == 0 {
					return &exitError{code: exitUsage, err: errors.New("record: no command after --")}
				}
			}
			if o.follow && len(command) == 0 {
				return &exitError{code: exitUsage, err: errors.New("record: --follow needs a command after --")}
			}
			if o.follow && o.pid != 0 {
				return &exitError{code: exitUsage, err: errors.New("record: --pid and --follow exclude each other")}
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
	f.StringVar(&o.bufSize, "buffer-size", "", "ring buffer size, a power of two with an optional K, M or G suffix (default 32M, a burst of 200,000 small events)")
	return cmd
}

// recordSetup loads the session, adds the LINEs and returns the events
// to attach: the session's enabled events and the LINEs' events.
func recordSetup(g *globals, lines []string, stderr io.Writer) (*loadedSession, []*events.Event, error) {
	s, err := g.loadSession()
	if err != nil {
		return nil, nil, err
	}
	// Events are identified by GROUP/NAME: the registry hands out
	// snapshots, not the live events.
	key := func(ev *events.Event) string { return ev.Group + "/" + ev.Name }
	want := map[string]bool{}
	for _, ev := range s.Reg.Events() {
		if ev.Enabled {
			want[key(ev)] = true
		}
	}
	for _, line := range lines {
		ev, err := s.Reg.Define(defaultFile(line), line)
		if err != nil {
			var we *events.WriteError
			if errors.As(err, &we) {
				for _, l := range we.Logs {
					fmt.Fprintf(stderr, "ktrace: %s: error: %s\n  Command: %s\n", l.Subsys, l.Msg, l.Cmd)
				}
			}
			return nil, nil, failf(exitRejected, "record: %q: %s", line, grammar.Strerror(grammar.ErrnoOf(err)))
		}
		if ev != nil {
			want[key(ev)] = true
		}
		reportNeeds(stderr, s.Reg.Model(), line)
	}
	var evs []*events.Event
	for _, ev := range s.Reg.Events() {
		if want[key(ev)] {
			evs = append(evs, ev)
		}
	}
	if len(evs) == 0 {
		return nil, nil, &exitError{code: exitUsage, err: errors.New("record: nothing to record: give probe LINEs or enable session events (ktrace enable)")}
	}
	return s, evs, nil
}

func runRecord(cmd *cobra.Command, g *globals, o *recordOpts, lines, command []string) error {
	stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
	if err := tracer.Check(); err != nil {
		return &exitError{code: exitNoAccess, err: fmt.Errorf("record: %w", err)}
	}
	g.kernel = "host"
	s, evs, err := recordSetup(g, lines, stderr)
	if err != nil {
		return err
	}
	ringSize, err := parseRingSize(o.bufSize)
	if err != nil {
		return &exitError{code: exitUsage, err: fmt.Errorf("record: --buffer-size: %w", err)}
	}
	m := s.env.model
	// SIGINT, SIGTERM and SIGHUP stop recording and detach; they are
	// caught from before the first probe is attached until everything is
	// detached, so that no signal (a second one included) cuts attaching
	// or detaching short. Unregistering is the last thing this function
	// does (deferred first).
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)
	ctx, cancelSig := context.WithCancel(context.Background())
	defer cancelSig()
	go func() {
		select {
		case <-sigs:
			cancelSig()
		case <-ctx.Done():
		}
	}()
	// tracefs probes that a killed ktrace left behind (its reaper is the
	// first defence) go before anything is attached.
	tracer.CleanStale("")
	attachStart := time.Now()
	// ktrace's own hits (reading the ring, writing this output) are
	// dropped in the kernel, before they take ring buffer space.
	sess, err := tracer.Open(tracer.Config{
		Model:       m,
		Events:      evs,
		KprobeMulti: m.Config("CONFIG_FPROBE") == "y",
		IgnoreTgid:  os.Getpid(),
		OnlyPid:     o.pid,
		Follow:      o.follow,
		RingSize:    ringSize,
		Reaper:      reaperExe(),
	})
	if err != nil {
		code := exitRejected
		if errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EACCES) {
			code = exitNoAccess
		}
		return &exitError{code: code, err: fmt.Errorf("record: %w", err)}
	}
	defer sess.Close()
	attachTime := time.Since(attachStart)
	programs, links := sess.Programs(), sess.Links()

	out := stdout
	if o.file != "" {
		f, err := os.Create(o.file)
		if err != nil {
			return failf(exitRejected, "record: %w", err)
		}
		defer f.Close()
		out = f
	}
	w := bufio.NewWriterSize(out, 64<<10)
	defer w.Flush()

	if o.duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.duration)
		defer cancel()
	}
	var filter func(r *tracer.Record) bool
	if o.pid != 0 {
		pid := o.pid
		filter = func(r *tracer.Record) bool { return int(r.Tgid()) == pid || int(r.Pid()) == pid }
	}
	done := make(chan error, 1)
	var child *exec.Cmd
	if len(command) > 0 {
		child = exec.Command(command[0], command[1:]...)
		child.Stdin, child.Stdout, child.Stderr = os.Stdin, stdout, stderr
		if err := child.Start(); err != nil {
			return failf(exitRejected, "record: %w", err)
		}
		go func() { done <- child.Wait() }()
	}

	start := time.Now()
	printed := map[*events.Event]uint64{}
	var total, bad uint64
	format := sess.Decoder().AppendText
	if g.output == "json" {
		format = sess.Decoder().AppendJSON
	}
	var buf []byte
	lost := &lostReporter{json: g.output == "json"}
	lastFlush := time.Now()
	self := uint32(os.Getpid())
	// Recording stops on a signal, at the duration, or when CMD exits;
	// then what the ring holds is read, for at most drainTime on a system
	// that keeps producing events.
	stop := make(chan struct{})
	childErr := error(nil)
	childDone := false
	go func() {
		select {
		case <-ctx.Done():
		case childErr = <-done:
			childDone = true
		}
		close(stop)
	}()
	stopped := sess.Run(stop, 100*time.Millisecond, drainTime, tracer.RunHandler{
		Record: func(r *tracer.Record) bool {
			// ktrace's own system calls (writing this output) would feed
			// back into vfs_write and similar probes forever.
			if r.Tgid() == self || (filter != nil && !filter(r)) {
				return true
			}
			buf = format(buf[:0], r)
			w.Write(buf)
			total++
			printed[r.Probe.Event]++
			return o.count == 0 || total < o.count
		},
		Undecodable: func(error) { bad++ },
		// Caught up: write out what is buffered, at most every flushEvery
		// while records keep coming (a reader that keeps up would
		// otherwise make a write and a counter lookup per event), and at
		// every timed-out wait.
		Idle: func(timedOut bool) {
			if timedOut || time.Since(lastFlush) >= flushEvery {
				lost.report(w, sess)
				w.Flush()
				lastFlush = time.Now()
			}
		},
	})
	draining := stopped
	lost.report(w, sess)
	w.Flush()
	detachStart := time.Now()
	sess.Detach()
	detachTime := time.Since(detachStart)
	if child != nil && !draining {
		child.Process.Signal(syscall.SIGTERM)
	}
	// The watcher ends with the context or the child, whichever first.
	cancelSig()
	<-stop
	if child != nil && !childDone {
		childErr = <-done
	}
	fmt.Fprintf(stderr, "ktrace: attached %d probes in %s (%d programs, %d links), detached in %s\n", len(sess.Plan().Probes), attachTime.Round(time.Millisecond), programs, links, detachTime.Round(time.Millisecond))
	printSummary(stderr, sess, printed, total, bad, time.Since(start))
	if ee := (*exec.ExitError)(nil); errors.As(childErr, &ee) {
		fmt.Fprintf(stderr, "ktrace: %s: %v\n", command[0], childErr)
	}
	return nil
}

// printSummary writes the hits, misses and printed counts per event.
func printSummary(stderr io.Writer, sess *tracer.Session, printed map[*events.Event]uint64, total, bad uint64, d time.Duration) {
	stats, err := sess.Stats()
	if err != nil {
		fmt.Fprintf(stderr, "ktrace: %v\n", err)
		return
	}
	type agg struct{ hits, misses uint64 }
	per := map[*events.Event]*agg{}
	var order []*events.Event
	var hits, misses uint64
	for _, st := range stats {
		ev := st.Probe.Event
		a := per[ev]
		if a == nil {
			a = &agg{}
			per[ev] = a
			order = append(order, ev)
		}
		a.hits += st.Hits
		a.misses += st.Misses
		hits += st.Hits
		misses += st.Misses
	}
	sort.SliceStable(order, func(i, j int) bool { return order[i].ID < order[j].ID })
	fmt.Fprintf(stderr, "ktrace: %d events printed in %s: %d hits, %d misses (ring buffer full), %d lost (undecodable)\n",
		total, d.Round(time.Millisecond), hits, misses, bad)
	for _, ev := range order {
		a := per[ev]
		fmt.Fprintf(stderr, "  %-40s hits=%s misses=%s printed=%s\n", ev.Group+"/"+ev.Name,
			strconv.FormatUint(a.hits, 10), strconv.FormatUint(a.misses, 10), strconv.FormatUint(printed[ev], 10))
	}
}

// reaperExe is the executable tracer sessions start as their reaper: this
// ktrace binary, whose main runs tracer.RunReaperIfAsked. "" (no reaper)
// when it cannot be found.
func reaperExe() string {
	exe, err := os.Executable()
	if err != nil {
		return ""
	}
	return exe
}

// lostReporter writes the kernel's "CPU:N [LOST M EVENTS]" line into the
// output where the ring buffer refused records since the last report, so
// a reader sees where events are missing, not just how many in the
// summary. JSON output gets {"lost": M, "cpu": N}.
type lostReporter struct {
	seen []uint64
	json bool
}

func (l *lostReporter) report(w io.Writer, sess *tracer.Session) {
	per, err := sess.CPUMisses()
	if err != nil {
		return
	}
	if l.seen == nil {
		l.seen = make([]uint64, len(per))
	}
	for cpu, n := range per {
		if cpu >= len(l.seen) || n <= l.seen[cpu] {
			continue
		}
		if l.json {
			fmt.Fprintf(w, "{\"lost\":%d,\"cpu\":%d}\n", n-l.seen[cpu], cpu)
		} else {
			fmt.Fprintf(w, "CPU:%d [LOST %d EVENTS]\n", cpu, n-l.seen[cpu])
		}
		l.seen[cpu] = n
	}
}

// parseRingSize reads --buffer-size: bytes with an optional K, M or G
// suffix (powers of 1024), a power of two of at least a page; "" is the
// default.
func parseRingSize(s string) (int, error) {
	if s == "" {
		return 0, nil
	}
	mult := 1
	switch s[len(s)-1] {
	case 'k', 'K':
		mult = 1 << 10
	case 'm', 'M':
		mult = 1 << 20
	case 'g', 'G':
		mult = 1 << 30
	}
	if mult != 1 {
		s = s[:len(s)-1]
	}
	n, err := strconv.Atoi(s)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("%q is not a size", s)
	}
	size := n * mult
	if size < os.Getpagesize() || size&(size-1) != 0 || size > 1<<30 {
		return 0, fmt.Errorf("%d bytes: want a power of two from %d to 1G", size, os.Getpagesize())
	}
	return size, nil
}
