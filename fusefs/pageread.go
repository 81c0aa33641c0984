package fusefs

import (
	"sync"

	"github.com/hanwen/go-fuse/v2/fuse"
)

// streamGuard fails the page-cache reads of trace_pipe.
//
// sendfile(2) and splice(2) read a FUSE file through the page cache even
// when it is open with FOPEN_DIRECT_IO, and stop at the inode size; busybox
// cat tries sendfile first. A waiting, consuming stream cannot be served
// that way: a page read would take entries into the cache, and the short
// read shrinks the inode size so the next call finds end of file. So
// trace_pipe has a non-zero size (sendfile must ask, not stop at once) and
// its page-cache reads fail; sendfile then fails with EIO and its callers
// (busybox, Python's shutil) fall back to read(2), which is served
// directly. The FUSE client tags every direct read with the reader's lock
// owner (FUSE_READ_LOCKOWNER) and no page-cache read, which is how the two
// are told apart; the stream handles are the ones opened with FOPEN_STREAM.
type streamGuard struct {
	fuse.RawFileSystem

	mu      sync.Mutex
	streams map[uint64]bool // open file handles of streams
}

func (g *streamGuard) note(fh uint64, openFlags uint32) {
	if openFlags&fuse.FOPEN_STREAM == 0 {
		return
	}
	g.mu.Lock()
	g.streams[fh] = true
	g.mu.Unlock()
}

func (g *streamGuard) Open(cancel <-chan struct{}, in *fuse.OpenIn, out *fuse.OpenOut) fuse.Status {
	st := g.RawFileSystem.Open(cancel, in, out)
	if st.Ok() {
		g.note(out.Fh, out.OpenFlags)
	}
	return st
}

func (g *streamGuard) Create(cancel <-chan struct{}, in *fuse.CreateIn, name string, out *fuse.CreateOut) fuse.Status {
	st := g.RawFileSystem.Create(cancel, in, name, out)
	if st.Ok() {
		g.note(out.Fh, out.OpenFlags)
	}
	return st
}

func (g *streamGuard) Read(cancel <-chan struct{}, in *fuse.ReadIn, buf []byte) (fuse.ReadResult, fuse.Status) {
	if in.ReadFlags&fuse.READ_LOCKOWNER == 0 {
		g.mu.Lock()
		stream := g.streams[in.Fh]
		g.mu.Unlock()
		if stream {
			return nil, fuse.EINVAL
		}
	}
	return g.RawFileSystem.Read(cancel, in, buf)
}

func (g *streamGuard) Release(cancel <-chan struct{}, in *fuse.ReleaseIn) {
	g.RawFileSystem.Release(cancel, in)
	g.mu.Lock()
	delete(g.streams, in.Fh)
	g.mu.Unlock()
}
