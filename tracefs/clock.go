package tracefs

import (
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// The trace clocks. ktrace's backends stamp records with CLOCK_MONOTONIC
// nanoseconds; an entry's time is shown in the clock trace_clock selects,
// converted from that stamp when the entry is recorded:
//   - local, global, perf and mono are the monotonic time itself (the
//     kernel's sched_clock based clocks, up to their drift);
//   - mono_raw, boot and tai are the monotonic time plus the offset
//     between the two clocks, read with clock_gettime when the clock is
//     selected;
//   - uptime is jiffies since boot in USER_HZ (100 Hz) ticks;
//   - counter is a count of the entries recorded, shared by every
//     instance, as the kernel's trace_clock_counter;
//   - x86-tsc is the time stamp counter, read with RDTSC when the clock
//     is selected and advanced at its rate, measured then.
// The last three are counts, not times: the kernel prints them as
// integers ("%12llu"). A change of clock empties the buffer, as the
// kernel's tracing_set_clock does.

// clockCounter is the counter clock (trace_clock_counter's atomic).
var clockCounter atomic.Uint64

// traceClock converts monotonic stamps into one clock.
type traceClock struct {
	name string
	// offset is added to a monotonic stamp (mono_raw, boot, tai).
	offset int64
	// tsc0, mono0 and rate (TSC ticks per nanosecond) convert a stamp
	// to x86-tsc.
	tsc0, mono0 uint64
	rate        float64
}

// newTraceClock prepares the conversion to the clock name.
func newTraceClock(name string) (*traceClock, error) {
	c := &traceClock{name: name}
	var id int32
	switch name {
	case "mono_raw":
		id = unix.CLOCK_MONOTONIC_RAW
	case "boot":
		id = unix.CLOCK_BOOTTIME
	case "tai":
		id = unix.CLOCK_TAI
	case "x86-tsc":
		tsc, mono, rate, err := calibrateTSC()
		if err != nil {
			return nil, err
		}
		c.tsc0, c.mono0, c.rate = tsc, mono, rate
		return c, nil
	default:
		return c, nil
	}
	mono, err := clockNow(unix.CLOCK_MONOTONIC)
	if err != nil {
		return nil, err
	}
	other, err := clockNow(id)
	if err != nil {
		return nil, err
	}
	c.offset = int64(other) - int64(mono)
	return c, nil
}

func clockNow(id int32) (uint64, error) {
	var ts unix.Timespec
	if err := unix.ClockGettime(id, &ts); err != nil {
		return 0, fmt.Errorf("clock_gettime(%d): %w", id, err)
	}
	return uint64(ts.Nano()), nil
}

// calibrateTSC reads the time stamp counter and the monotonic clock
// together, twice, a millisecond apart, for the counter's rate.
func calibrateTSC() (tsc, mono uint64, rate float64, err error) {
	if !haveTSC {
		return 0, 0, 0, fmt.Errorf("x86-tsc: no time stamp counter on this machine")
	}
	m0, err := clockNow(unix.CLOCK_MONOTONIC)
	if err != nil {
		return 0, 0, 0, err
	}
	t0 := readTSC()
	deadline := m0 + uint64(time.Millisecond)
	m1 := m0
	for m1 < deadline {
		if m1, err = clockNow(unix.CLOCK_MONOTONIC); err != nil {
			return 0, 0, 0, err
		}
	}
	t1 := readTSC()
	return t0, m0, float64(t1-t0) / float64(m1-m0), nil
}

// inNs reports whether the clock counts nanoseconds (printed as seconds
// and microseconds) rather than ticks.
func (c *traceClock) inNs() bool {
	switch c.name {
	case "counter", "uptime", "x86-tsc":
		return false
	}
	return true
}

// identity reports whether the clock is the monotonic stamp itself.
func (c *traceClock) identity() bool {
	switch c.name {
	case "local", "global", "perf", "mono":
		return true
	}
	return false
}

// value is the clock's reading at monotonic stamp ts.
func (c *traceClock) value(ts uint64) uint64 {
	switch c.name {
	case "counter":
		return clockCounter.Add(1)
	case "uptime":
		return ts / 1e7
	case "x86-tsc":
		return c.tsc0 + uint64(float64(int64(ts-c.mono0))*c.rate)
	}
	return uint64(int64(ts) + c.offset)
}

// restamp rewrites an entry's time, formatted from its monotonic stamp
// as "SECS.USECS: " by whoever made the line, in the clock (f.mu held).
func (f *FS) restamp(e *traceEntry) {
	c := f.clockConv
	if c == nil || c.identity() {
		return
	}
	old := fmt.Sprintf("%5d.%06d: ", e.ts/1e9, e.ts%1e9/1e3)
	i := strings.Index(e.text, old)
	if i < 0 {
		return
	}
	v := c.value(e.ts)
	repl := fmt.Sprintf("%12d: ", v)
	if c.inNs() {
		repl = fmt.Sprintf("%5d.%06d: ", v/1e9, v%1e9/1e3)
	}
	e.text = e.text[:i] + repl + e.text[i+len(old):]
}
