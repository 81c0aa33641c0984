package tracer

import (
	"fmt"
	"sync"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/rlimit"
)

// PreparedRing is a session's ring buffer created ahead of the session.
// The kernel allocates and clears every page of a ring buffer map when it
// creates it: for 32 MiB, a quarter of a second on a 2-CPU
// guest under emulation, as long as the whole tracefs cycle of defining,
// enabling, disabling and removing a probe. A front end that prepares
// the ring before it loads its kernel model has both done at once.
type PreparedRing struct {
	size int
	done chan struct{}

	ring   *ebpf.Map
	reader *ringReader
	err    error

	mu    sync.Mutex
	taken bool
}

// PrepareRing starts creating and mapping a ring buffer of size bytes (0:
// SmallestDefaultRing, the default of events that carry no more than a
// couple of arguments) in the background. Config.Ring hands it to Open; Close
// releases it when no session took it.
func PrepareRing(size int) *PreparedRing {
	if size == 0 {
		size = SmallestDefaultRing
	}
	p := &PreparedRing{size: size, done: make(chan struct{})}
	go func() {
		defer close(p.done)
		if err := rlimit.RemoveMemlock(); err != nil {
			p.err = fmt.Errorf("tracer: raising RLIMIT_MEMLOCK: %w", err)
			return
		}
		p.ring, p.err = ebpf.NewMap(ringSpec(size))
		if p.err != nil {
			p.err = fmt.Errorf("tracer: creating map %s: %w", ringMapName, p.err)
			return
		}
		if p.reader, p.err = newRingReader(p.ring); p.err != nil {
			p.ring.Close()
			p.ring, p.err = nil, fmt.Errorf("tracer: %w", p.err)
		}
	}()
	return p
}

// take waits for the ring and hands it over when it has the size a plan
// wants; a ring of another size, or one that could not be made, is
// released, and the session makes its own (ok false).
func (p *PreparedRing) take(size int) (ring *ebpf.Map, reader *ringReader, ok bool) {
	<-p.done
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.taken {
		return nil, nil, false
	}
	p.taken = true
	if p.err != nil || size != p.size {
		p.release()
		return nil, nil, false
	}
	return p.ring, p.reader, true
}

// Close releases the ring unless a session took it. It waits for the
// creation to end.
func (p *PreparedRing) Close() {
	if p == nil {
		return
	}
	<-p.done
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.taken {
		p.taken = true
		p.release()
	}
}

func (p *PreparedRing) release() {
	if p.reader != nil {
		p.reader.Close()
	}
	if p.ring != nil {
		p.ring.Close()
	}
}
