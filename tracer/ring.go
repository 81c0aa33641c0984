package tracer

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
)

// ringReader reads a BPF_MAP_TYPE_RINGBUF map in place. The kernel maps
// the ring's data pages twice in a row, so a record that wraps around the
// end is contiguous; records are handed to the caller where they lie,
// without a copy, and the consumer position moves once per stretch of
// records rather than once per record. A reader that keeps up with a
// probe hit every few microseconds spends its time formatting, not
// taking records off the ring.
//
// Waiting uses epoll on the map, plus three eventfds: one that Flush
// writes, one that wake writes to end a wait early (a stop request), and
// one that Close writes.
type ringReader struct {
	cons, prod []byte // the consumer page, and the producer page plus data
	consPos    *uint64
	prodPos    *uint64
	data       []byte // the data pages, mapped twice
	mask       uint64

	epfd, flushFd, wakeFd, closeFd int
	events                         []unix.EpollEvent

	// mu is held while records are read or waited for; Close takes it
	// after waking a waiter, before unmapping.
	mu     sync.Mutex
	closed atomic.Bool

	// flushes are the producer's positions at the Flush calls whose
	// records have not all been read yet, oldest first (fmu).
	fmu     sync.Mutex
	flushes []uint64
}

// Ring buffer record header bits (kernel/bpf/ringbuf.c).
const (
	ringBusyBit    = 1 << 31
	ringDiscardBit = 1 << 30
	ringHdrSize    = 8
)

// commitEvery is how many bytes of records the reader handles before it
// gives their space back to the producers.
const commitEvery = 64 << 10

// errRingClosed is what a reader's methods return after Close.
var errRingClosed = fmt.Errorf("ring buffer reader: %w", os.ErrClosed)

// newRingReader maps ring buffer m and prepares waiting on it.
func newRingReader(m *ebpf.Map) (r *ringReader, err error) {
	size := int(m.MaxEntries())
	page := os.Getpagesize()
	if size <= 0 || size&(size-1) != 0 {
		return nil, fmt.Errorf("ring buffer reader: size %d is not a power of two", size)
	}
	r = &ringReader{epfd: -1, flushFd: -1, wakeFd: -1, closeFd: -1, mask: uint64(size - 1)}
	defer func() {
		if err != nil {
			r.release()
		}
	}()
	fd := m.FD()
	if r.cons, err = unix.Mmap(fd, 0, page, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED); err != nil {
		return nil, fmt.Errorf("ring buffer reader: mapping the consumer page: %w", err)
	}
	if r.prod, err = unix.Mmap(fd, int64(page), page+2*size, unix.PROT_READ, unix.MAP_SHARED); err != nil {
		return nil, fmt.Errorf("ring buffer reader: mapping the data pages: %w", err)
	}
	r.consPos = (*uint64)(unsafe.Pointer(&r.cons[0]))
	r.prodPos = (*uint64)(unsafe.Pointer(&r.prod[0]))
	r.data = r.prod[page:]
	if r.epfd, err = unix.EpollCreate1(unix.EPOLL_CLOEXEC); err != nil {
		return nil, fmt.Errorf("ring buffer reader: epoll: %w", err)
	}
	if r.flushFd, err = unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK); err != nil {
		return nil, fmt.Errorf("ring buffer reader: eventfd: %w", err)
	}
	if r.wakeFd, err = unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK); err != nil {
		return nil, fmt.Errorf("ring buffer reader: eventfd: %w", err)
	}
	if r.closeFd, err = unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK); err != nil {
		return nil, fmt.Errorf("ring buffer reader: eventfd: %w", err)
	}
	for _, f := range []int{fd, r.flushFd, r.wakeFd, r.closeFd} {
		ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(f)}
		if err = unix.EpollCtl(r.epfd, unix.EPOLL_CTL_ADD, f, &ev); err != nil {
			return nil, fmt.Errorf("ring buffer reader: epoll: %w", err)
		}
	}
	r.events = make([]unix.EpollEvent, 4)
	return r, nil
}

// available returns the bytes of records waiting to be read.
func (r *ringReader) available() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed.Load() {
		return 0
	}
	return int(atomic.LoadUint64(r.prodPos) - atomic.LoadUint64(r.consPos))
}

// wait blocks until a record may be waiting or wake was called (nil), the
// deadline passes (ErrTimeout), Flush is called (ErrFlushed) or the reader
// is closed. A
// record sent without a wake-up does not end it: the caller looks at the
// ring whatever wait returned.
func (r *ringReader) wait(deadline time.Time) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed.Load() {
		return errRingClosed
	}
	for {
		timeout := -1
		if !deadline.IsZero() {
			timeout = int(max(0, time.Until(deadline).Milliseconds()))
		}
		n, err := unix.EpollWait(r.epfd, r.events, timeout)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return fmt.Errorf("ring buffer reader: epoll_wait: %w", err)
		}
		if n == 0 {
			return ErrTimeout
		}
		flushed := false
		for _, ev := range r.events[:n] {
			switch int(ev.Fd) {
			case r.closeFd:
				return errRingClosed
			case r.flushFd:
				var b [8]byte
				unix.Read(r.flushFd, b[:])
				flushed = true
			case r.wakeFd:
				var b [8]byte
				unix.Read(r.wakeFd, b[:])
			}
		}
		if flushed {
			return ErrFlushed
		}
		return nil
	}
}

// read hands fn, in order, the records the ring held when it was called
// (discarded ones skipped), each aliasing the ring: fn must not keep it.
// It stops early, returning false, when fn returns false; the record fn
// refused is consumed all the same. A record still being written ends
// the stretch early.
func (r *ringReader) read(fn func(sample []byte) bool) (bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed.Load() {
		return false, errRingClosed
	}
	cons := atomic.LoadUint64(r.consPos)
	prod := atomic.LoadUint64(r.prodPos)
	committed := cons
	defer func() {
		if cons != committed {
			atomic.StoreUint64(r.consPos, cons)
		}
	}()
	for cons < prod {
		if prod-cons < ringHdrSize {
			return true, fmt.Errorf("ring buffer reader: %d bytes left, want a record header", prod-cons)
		}
		start := cons & r.mask
		// The length word is read atomically: the kernel clears the
		// busy bit with an atomic exchange once the record is written.
		hdr := atomic.LoadUint32((*uint32)(unsafe.Pointer(&r.data[start])))
		if hdr&ringBusyBit != 0 {
			return true, nil
		}
		n := uint64(hdr &^ (ringBusyBit | ringDiscardBit))
		size := ringHdrSize + (n+7)&^7
		if prod-cons < size {
			return true, fmt.Errorf("ring buffer reader: record of %d bytes, %d left", n, prod-cons-ringHdrSize)
		}
		sample := r.data[start+ringHdrSize : start+ringHdrSize+n : start+ringHdrSize+n]
		cons += size
		if hdr&ringDiscardBit == 0 && !fn(sample) {
			return false, nil
		}
		if cons-committed >= commitEvery {
			atomic.StoreUint64(r.consPos, cons)
			committed = cons
		}
	}
	return true, nil
}

// Flush makes the current or next wait return ErrFlushed, and notes
// where the producer is: once the reader has read up to there, reached
// counts this call, even when records never stop coming.
func (r *ringReader) Flush() error {
	if r.closed.Load() {
		return errRingClosed
	}
	r.fmu.Lock()
	r.flushes = append(r.flushes, atomic.LoadUint64(r.prodPos))
	r.fmu.Unlock()
	one := [8]byte{1}
	if _, err := unix.Write(r.flushFd, one[:]); err != nil {
		r.fmu.Lock()
		r.flushes = r.flushes[:max(0, len(r.flushes)-1)]
		r.fmu.Unlock()
		return fmt.Errorf("ring buffer reader: flush: %w", err)
	}
	return nil
}

// reached returns how many Flush calls have had every record the ring
// held at the time read (oldest first), and forgets them.
func (r *ringReader) reached() int {
	if r.closed.Load() {
		return 0
	}
	cons := atomic.LoadUint64(r.consPos)
	r.fmu.Lock()
	defer r.fmu.Unlock()
	n := 0
	for n < len(r.flushes) && r.flushes[n] <= cons {
		n++
	}
	r.flushes = r.flushes[n:]
	return n
}

// wake ends the current or next wait, which returns nil.
func (r *ringReader) wake() {
	if r.closed.Load() {
		return
	}
	one := [8]byte{1}
	unix.Write(r.wakeFd, one[:])
}

// Close ends a wait in progress and releases the mappings and descriptors.
func (r *ringReader) Close() error {
	if r.closed.Swap(true) {
		return nil
	}
	one := [8]byte{1}
	unix.Write(r.closeFd, one[:])
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.release()
}

// release unmaps and closes what the reader holds.
func (r *ringReader) release() error {
	var errs []error
	for _, b := range [][]byte{r.prod, r.cons} {
		if b != nil {
			errs = append(errs, unix.Munmap(b))
		}
	}
	r.prod, r.cons, r.data = nil, nil, nil
	for _, fd := range []*int{&r.epfd, &r.flushFd, &r.wakeFd, &r.closeFd} {
		if *fd >= 0 {
			errs = append(errs, unix.Close(*fd))
			*fd = -1
		}
	}
	return errors.Join(errs...)
}

// RingReader reads a BPF ring buffer map for a reader loop of the
// caller's own (the live backend's static events): its records in order,
// and flushes that complete once the records the ring held when Flush was
// called are read, even while hits keep coming.
type RingReader struct{ r *ringReader }

// NewRingReader maps ring buffer map m for reading.
func NewRingReader(m *ebpf.Map) (*RingReader, error) {
	r, err := newRingReader(m)
	if err != nil {
		return nil, err
	}
	return &RingReader{r}, nil
}

// Next hands fn, in order, the records the ring holds, waiting up to poll
// for one when it is empty; sample aliases the ring's read-only pages and
// is valid during the call only. It returns how many Flush calls
// completed meanwhile (oldest first). An error means the reader is closed
// or broken, and the loop should end.
func (rr *RingReader) Next(poll time.Duration, fn func(sample []byte)) (int, error) {
	r := rr.r
	if r.available() == 0 {
		err := r.wait(time.Now().Add(poll))
		switch {
		case err == nil, errors.Is(err, ErrTimeout), errors.Is(err, ErrFlushed):
		default:
			return 0, err
		}
	}
	if _, err := r.read(func(sample []byte) bool { fn(sample); return true }); err != nil {
		return 0, err
	}
	return r.reached(), nil
}

// Flush marks where the producer is: a later Next counts it once every
// record before that point was read.
func (rr *RingReader) Flush() error { return rr.r.Flush() }

// Close ends a Next in progress and releases the reader.
func (rr *RingReader) Close() error { return rr.r.Close() }
