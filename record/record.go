package record

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/ktrace-dev/ktrace/events"
	"github.com/ktrace-dev/ktrace/kernel"
	"github.com/ktrace-dev/ktrace/tracer"
)

// flushEvery is how often the output is written out while events keep
// coming.
const flushEvery = 50 * time.Millisecond

// outBuffer is the size of the output buffer: events are formatted into
// it in place and written out in big writes.
const outBuffer = 256 << 10

// Options describe one recording.
type Options struct {
	Model  *kernel.Model
	Events []*events.Event
	// Pid keeps only the events of one process (thread group id or
	// thread id); Follow keeps those of Command's process tree.
	Pid      int
	Follow   bool
	RingSize int // bytes; 0 is tracer's default
	// Ring, when set, is the ring buffer prepared for the recording
	// (tracer.PrepareRing of RingSize), made while the caller loaded its
	// model.
	Ring *tracer.PreparedRing
	// Duration and Count stop the recording (0: no limit).
	Duration time.Duration
	Count    uint64
	// Command is run once everything is attached; its exit stops the
	// recording. Its standard streams are Stdin, Stdout and Stderr.
	Command        []string
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// Out receives the trace lines (JSON objects when JSON is set).
	Out  io.Writer
	JSON bool
	// Reaper is the executable tracer sessions start as their reaper
	// ("" for none).
	Reaper string
	// Export, when set, is given every printed record too, on the ring
	// buffer reader: it must neither block nor keep r.
	Export func(d *tracer.Decoder, r *tracer.Record)
	// Triggers are hist triggers (ParseTriggers) counted by the
	// events' programs; their hist files are written to Out once the
	// recording ends, as the running kernel prints them.
	Triggers []*Triggers
	// NoTrace counts hits and histograms without writing any event: the
	// events are in soft mode, as with only triggers on the kernel's.
	NoTrace bool
	// Counters, when set, is called once the probes are attached with a
	// function that reads the recording's counters, from any goroutine;
	// once Run has returned, that function keeps answering the final
	// counts.
	Counters func(read func() (Counts, error))
}

// Counts is a snapshot of a recording's counters: the kernel-side hits
// and misses per event (Printed is not set) and the undecodable records.
type Counts struct {
	Events      []EventCount
	Undecodable uint64
}

// EventCount is one event's line of the summary.
type EventCount struct {
	Name                  string // GROUP/EVENT
	Hits, Misses, Printed uint64
}

// Summary is what a recording did.
type Summary struct {
	Probes, Programs, Links int
	Attach, Detach, Elapsed time.Duration
	// Printed events, and records that could not be decoded.
	Printed, Undecodable uint64
	Hits, Misses         uint64
	Events               []EventCount
	// StatsErr is set when the kernel-side counters could not be read.
	StatsErr error
	// Command is the command's name, CommandErr its exit error (nil: it
	// exited 0 or there was none).
	Command    string
	CommandErr error
}

// Run records until ctx is cancelled, the duration passes, Count events
// are printed or the command exits. Probes are tied to this process:
// nothing stays attached when it exits or is killed. Errors from
// attaching wrap the kernel's errno (EPERM, EACCES: no privilege).
func Run(ctx context.Context, o Options) (*Summary, error) {
	// tracefs probes that a killed ktrace left behind (its reaper is the
	// first defence) go before anything is attached.
	tracer.CleanStale("")
	attachStart := time.Now()
	hists, err := openHists(o.Triggers)
	if err != nil {
		return nil, err
	}
	if o.NoTrace {
		for _, ev := range o.Events {
			eo := hists[ev]
			eo.NoTrace = true
			hists[ev] = eo
		}
	}
	defer closeHists(o.Triggers)
	// ktrace's own hits (reading the ring, writing this output) are
	// dropped in the kernel, before they take ring buffer space.
	sess, err := tracer.Open(tracer.Config{
		Model:        o.Model,
		Events:       o.Events,
		KprobeMulti:  o.Model.Config("CONFIG_FPROBE") == "y",
		IgnoreTgid:   os.Getpid(),
		OnlyPid:      o.Pid,
		Follow:       o.Follow,
		RingSize:     o.RingSize,
		Ring:         o.Ring,
		Reaper:       o.Reaper,
		EventOptions: hists,
	})
	if err != nil {
		return nil, err
	}
	defer sess.Close()
	sum := &Summary{Attach: time.Since(attachStart), Probes: len(sess.Plan().Probes), Programs: sess.Programs(), Links: sess.Links()}

	w := bufio.NewWriterSize(o.Out, outBuffer)
	defer w.Flush()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if o.Duration > 0 {
		var cancelTimeout context.CancelFunc
		ctx, cancelTimeout = context.WithTimeout(ctx, o.Duration)
		defer cancelTimeout()
	}
	done := make(chan error, 1)
	var child *exec.Cmd
	if len(o.Command) > 0 {
		child = exec.Command(o.Command[0], o.Command[1:]...)
		child.Stdin, child.Stdout, child.Stderr = o.Stdin, o.Stdout, o.Stderr
		if err := child.Start(); err != nil {
			return nil, fmt.Errorf("run %s: %w", o.Command[0], err)
		}
		go func() { done <- child.Wait() }()
	}

	start := time.Now()
	printed := map[*events.Event]uint64{}
	var undecodable atomic.Uint64
	var countsMu sync.RWMutex
	var final *Counts
	var finalErr error
	if o.Counters != nil {
		o.Counters(func() (Counts, error) {
			countsMu.RLock()
			defer countsMu.RUnlock()
			if final != nil {
				return *final, finalErr
			}
			stats, err := sess.Stats()
			if err != nil {
				return Counts{}, err
			}
			evs, _, _ := eventCounts(stats, nil)
			return Counts{Events: evs, Undecodable: undecodable.Load()}, nil
		})
		// The session closes when Run returns: from then on the final
		// counts answer.
		defer func() {
			countsMu.Lock()
			final = &Counts{Undecodable: sum.Undecodable}
			for _, e := range sum.Events {
				e.Printed = 0
				final.Events = append(final.Events, e)
			}
			finalErr = sum.StatsErr
			countsMu.Unlock()
		}()
	}
	format := sess.Decoder().AppendText
	if o.JSON {
		format = sess.Decoder().AppendJSON
	}
	lost := &lostMarker{json: o.JSON}
	lastFlush := time.Now()
	self := uint32(os.Getpid())
	pid := o.Pid
	// Recording stops on cancel, at the duration, or when the command
	// exits: the probes are detached, then all the ring holds is read
	// (nothing is added to it any more).
	stop := make(chan struct{})
	var childErr error
	childDone := false
	go func() {
		select {
		case <-ctx.Done():
		case childErr = <-done:
			childDone = true
		}
		detachStart := time.Now()
		sess.Detach()
		sum.Detach = time.Since(detachStart)
		close(stop)
	}()
	stopped := sess.Run(stop, 100*time.Millisecond, 0, tracer.RunHandler{
		Record: func(r *tracer.Record) bool {
			// ktrace's own system calls (writing this output) would feed
			// back into vfs_write and similar probes forever.
			if r.Tgid() == self || (pid != 0 && int(r.Tgid()) != pid && int(r.Pid()) != pid) {
				return true
			}
			// Formatted in place, in the writer's free space.
			w.Write(format(w.AvailableBuffer(), r))
			sum.Printed++
			printed[r.Probe.Event]++
			if o.Export != nil {
				o.Export(sess.Decoder(), r)
			}
			return o.Count == 0 || sum.Printed < o.Count
		},
		Undecodable: func(error) {
			sum.Undecodable++
			undecodable.Add(1)
		},
		// Caught up: write out what is buffered, at most every flushEvery
		// while records keep coming (a reader that keeps up would
		// otherwise make a write and a counter lookup per event), and at
		// every timed-out wait.
		Idle: func(timedOut bool) {
			if timedOut || time.Since(lastFlush) >= flushEvery {
				lost.mark(w, sess)
				w.Flush()
				lastFlush = time.Now()
			}
		},
	})
	lost.mark(w, sess)
	w.Flush()
	if child != nil && !stopped {
		child.Process.Signal(syscall.SIGTERM)
	}
	// The watcher ends with the context or the child, whichever first,
	// having detached the probes.
	cancel()
	<-stop
	if child != nil && !childDone {
		childErr = <-done
	}
	if child != nil {
		sum.Command, sum.CommandErr = o.Command[0], childErr
	}
	sum.Elapsed = time.Since(start)
	sum.count(sess, printed)
	if len(o.Triggers) > 0 {
		if o.JSON {
			err = writeHistsJSON(w, o.Triggers, o.Model)
		} else {
			err = writeHists(w, o.Triggers, o.Model)
		}
		w.Flush()
		if err != nil {
			return sum, err
		}
	}
	return sum, nil
}

// count fills the per-event hits, misses and printed counts, in event ID
// order.
func (s *Summary) count(sess *tracer.Session, printed map[*events.Event]uint64) {
	stats, err := sess.Stats()
	if err != nil {
		s.StatsErr = err
		return
	}
	s.Events, s.Hits, s.Misses = eventCounts(stats, printed)
}

// eventCounts sums the probes' counters per event, in event ID order,
// with the printed counts (printed may be nil), and their totals.
func eventCounts(stats []tracer.Stat, printed map[*events.Event]uint64) (out []EventCount, hits, misses uint64) {
	per := map[*events.Event]*EventCount{}
	var order []*events.Event
	for _, st := range stats {
		ev := st.Probe.Event
		c := per[ev]
		if c == nil {
			c = &EventCount{Name: ev.Group + "/" + ev.Name, Printed: printed[ev]}
			per[ev] = c
			order = append(order, ev)
		}
		c.Hits += st.Hits
		c.Misses += st.Misses
		hits += st.Hits
		misses += st.Misses
	}
	sort.SliceStable(order, func(i, j int) bool { return order[i].ID < order[j].ID })
	for _, ev := range order {
		out = append(out, *per[ev])
	}
	return out, hits, misses
}

// WriteText writes the summary as record prints it on stderr: the attach
// line, the totals, one line per event, and how the command failed.
func (s *Summary) WriteText(w io.Writer) {
	fmt.Fprintf(w, "ktrace: attached %d probes in %s (%d programs, %d links), detached in %s\n", s.Probes, s.Attach.Round(time.Millisecond), s.Programs, s.Links, s.Detach.Round(time.Millisecond))
	if s.StatsErr != nil {
		fmt.Fprintf(w, "ktrace: %v\n", s.StatsErr)
	} else {
		fmt.Fprintf(w, "ktrace: %d events printed in %s: %d hits, %d misses (ring buffer full), %d lost (undecodable)\n",
			s.Printed, s.Elapsed.Round(time.Millisecond), s.Hits, s.Misses, s.Undecodable)
		for _, e := range s.Events {
			fmt.Fprintf(w, "  %-40s hits=%s misses=%s printed=%s\n", e.Name,
				strconv.FormatUint(e.Hits, 10), strconv.FormatUint(e.Misses, 10), strconv.FormatUint(e.Printed, 10))
		}
	}
	if ee := (*exec.ExitError)(nil); errors.As(s.CommandErr, &ee) {
		fmt.Fprintf(w, "ktrace: %s: %v\n", s.Command, s.CommandErr)
	}
}

// lostMarker writes the kernel's "CPU:N [LOST M EVENTS]" line into the
// output where the ring buffer refused records since the last mark, so a
// reader sees where events are missing, not just how many in the
// summary. JSON output gets {"lost": M, "cpu": N}.
type lostMarker struct {
	seen []uint64
	json bool
}

func (l *lostMarker) mark(w io.Writer, sess *tracer.Session) {
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

// ParseRingSize reads a ring buffer size: bytes with an optional K, M or
// G suffix (powers of 1024), a power of two from a page to 1G; "" is 0,
// the default.
func ParseRingSize(s string) (int, error) {
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
